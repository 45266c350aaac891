"""manage_todo: the task list kept in .ironhive/todo.json."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ironhive.adapters.tools.todo import ManageTodoTool
from ironhive.domain.errors import ToolArgumentError, ToolError


class FixedClock:
    """A clock that always says the same time."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment

    def monotonic(self) -> float:
        return 0.0


NOON = datetime(2025, 1, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def todo(tmp_path: Path) -> ManageTodoTool:
    return ManageTodoTool(tmp_path, clock=FixedClock(NOON))


def _stored(tmp_path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((tmp_path / ".ironhive" / "todo.json").read_text())
    return data


async def test_add_replies_with_the_new_id_and_stores_camel_case(todo: ManageTodoTool, tmp_path: Path) -> None:
    assert await todo.invoke({"action": "add", "task": "Write tests"}) == "Added task #1: Write tests"
    assert await todo.invoke({"action": "add", "task": "Ship", "priority": "high", "dependencies": "1"}) == (
        "Added task #2: Ship"
    )
    assert _stored(tmp_path) == {
        "nextId": 3,
        "items": [
            {
                "id": 1,
                "task": "Write tests",
                "status": "pending",
                "priority": "medium",
                "createdAt": "2025-01-02T12:00:00+00:00",
            },
            {
                "id": 2,
                "task": "Ship",
                "status": "pending",
                "priority": "high",
                "dependencies": [1],
                "createdAt": "2025-01-02T12:00:00+00:00",
            },
        ],
    }


async def test_list_groups_by_status_and_orders_by_priority(todo: ManageTodoTool) -> None:
    assert await todo.invoke({"action": "list"}) == "No todo items."
    await todo.invoke({"action": "add", "task": "low one", "priority": "low"})
    await todo.invoke({"action": "add", "task": "urgent", "priority": "H"})
    await todo.invoke({"action": "add", "task": "needs both", "dependencies": "#1, 2"})
    await todo.invoke({"action": "update", "id": 2, "status": "in-progress"})
    assert (await todo.invoke({"action": "LIST"})).splitlines() == [
        "Todo list (3 items):",
        "",
        "[pending]",
        "  #3 [medium] needs both (depends on: #1, #2)",
        "  #1 [low] low one",
        "",
        "[in_progress]",
        "  #2 [high] urgent",
    ]


async def test_update_changes_fields_and_reports_status(todo: ManageTodoTool, tmp_path: Path) -> None:
    await todo.invoke({"action": "add", "task": "draft"})
    result = await todo.invoke({"action": "update", "id": "1", "task": "final", "status": "blocked", "priority": "l"})
    assert result == "Updated task #1: final [blocked]"
    item = _stored(tmp_path)["items"][0]  # type: ignore[index]
    assert item["status"] == "blocked"
    assert item["priority"] == "low"
    assert item["updatedAt"] == "2025-01-02T12:00:00+00:00"


@pytest.mark.parametrize(
    ("alias", "status"),
    [("done", "completed"), ("In Progress", "in_progress"), ("inprogress", "in_progress"), ("p", "pending")],
)
async def test_status_aliases(todo: ManageTodoTool, alias: str, status: str) -> None:
    await todo.invoke({"action": "add", "task": "t"})
    assert await todo.invoke({"action": "update", "id": 1, "status": alias}) == f"Updated task #1: t [{status}]"


async def test_unknown_status_and_priority_are_errors(todo: ManageTodoTool) -> None:
    await todo.invoke({"action": "add", "task": "t"})
    with pytest.raises(ToolArgumentError, match=r"Unknown status 'sleeping'. Use one of: pending, in_progress"):
        await todo.invoke({"action": "update", "id": 1, "status": "sleeping"})
    with pytest.raises(ToolArgumentError, match=r"Unknown priority 'urgent'"):
        await todo.invoke({"action": "add", "task": "t2", "priority": "urgent"})


async def test_complete_warns_about_incomplete_dependencies(todo: ManageTodoTool, tmp_path: Path) -> None:
    await todo.invoke({"action": "add", "task": "base"})
    await todo.invoke({"action": "add", "task": "top", "dependencies": "1"})
    warning = await todo.invoke({"action": "complete", "id": 2})
    assert warning.startswith("Warning: Task #2 has incomplete dependencies: #1.")
    assert _stored(tmp_path)["items"][1]["status"] == "pending"  # type: ignore[index]
    assert await todo.invoke({"action": "complete", "id": 1}) == "Completed task #1: base"
    assert await todo.invoke({"action": "complete", "id": 2}) == "Completed task #2: top"
    assert _stored(tmp_path)["items"][1]["completedAt"] == "2025-01-02T12:00:00+00:00"  # type: ignore[index]


async def test_remove_and_ids_keep_increasing(todo: ManageTodoTool) -> None:
    await todo.invoke({"action": "add", "task": "one"})
    await todo.invoke({"action": "add", "task": "two"})
    assert await todo.invoke({"action": "remove", "id": 2}) == "Removed task #2: two"
    assert await todo.invoke({"action": "add", "task": "three"}) == "Added task #3: three"


async def test_clear_removes_completed_tasks_only(todo: ManageTodoTool) -> None:
    assert await todo.invoke({"action": "clear"}) == "No completed tasks to clear."
    for name in ("a", "b", "c"):
        await todo.invoke({"action": "add", "task": name})
    await todo.invoke({"action": "complete", "id": 1})
    await todo.invoke({"action": "update", "id": 3, "status": "done"})
    assert await todo.invoke({"action": "clear"}) == "Cleared 2 completed tasks. 1 remaining."
    assert (await todo.invoke({"action": "list"})).splitlines()[-1] == "  #2 [medium] b"


async def test_missing_parameters_are_named(todo: ManageTodoTool) -> None:
    with pytest.raises(ToolArgumentError, match=r"required parameter 'task'") as info:
        await todo.invoke({"action": "add", "task": "  "})
    assert info.value.parameter == "task"
    for action in ("update", "complete", "remove"):
        with pytest.raises(ToolArgumentError, match=r"required parameter 'id'"):
            await todo.invoke({"action": action})
    with pytest.raises(ToolArgumentError, match=r"required parameter 'action'"):
        await todo.invoke({})
    with pytest.raises(ToolArgumentError, match=r"must be one of: add, list, update, complete, remove, clear"):
        await todo.invoke({"action": "archive"})


async def test_unknown_task_and_bad_dependencies(todo: ManageTodoTool) -> None:
    await todo.invoke({"action": "add", "task": "t"})
    with pytest.raises(ToolError, match=r"^Task #9 not found\.$"):
        await todo.invoke({"action": "complete", "id": 9})
    with pytest.raises(ToolArgumentError, match=r"Unknown dependency id"):
        await todo.invoke({"action": "add", "task": "u", "dependencies": "7"})
    with pytest.raises(ToolArgumentError, match=r"comma-separated task ids"):
        await todo.invoke({"action": "add", "task": "u", "dependencies": "first"})
    with pytest.raises(ToolArgumentError, match=r"cannot depend on itself"):
        await todo.invoke({"action": "update", "id": 1, "dependencies": "1"})
    with pytest.raises(ToolError, match=r"Nothing to update"):
        await todo.invoke({"action": "update", "id": 1})


async def test_malformed_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / ".ironhive" / "todo.json"
    path.parent.mkdir()
    path.write_text("{not json")
    with pytest.raises(ToolError, match=r"malformed"):
        await ManageTodoTool(tmp_path).invoke({"action": "add", "task": "t"})
    assert path.read_text() == "{not json"


async def test_reads_a_list_written_with_string_ids_and_dotnet_enum_names(tmp_path: Path) -> None:
    path = tmp_path / ".ironhive" / "todo.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"items": [{"id": "4", "task": "old", "status": "InProgress", "priority": "High"}]}))
    tool = ManageTodoTool(tmp_path)
    assert (await tool.invoke({"action": "list"})).splitlines()[-1] == "  #4 [high] old"
    assert await tool.invoke({"action": "add", "task": "new"}) == "Added task #5: new"


async def test_writes_are_atomic_and_concurrent_calls_do_not_lose_tasks(todo: ManageTodoTool, tmp_path: Path) -> None:
    results = await asyncio.gather(*(todo.invoke({"action": "add", "task": f"t{n}"}) for n in range(10)))
    assert sorted(int(result.split("#")[1].split(":")[0]) for result in results) == list(range(1, 11))
    assert len(_stored(tmp_path)["items"]) == 10  # type: ignore[arg-type]
    assert sorted(path.name for path in (tmp_path / ".ironhive").iterdir()) == ["todo.json", "todo.json.lock"]


async def test_uses_the_system_clock_by_default(tmp_path: Path) -> None:
    await ManageTodoTool(tmp_path).invoke({"action": "add", "task": "t"})
    created = datetime.fromisoformat(_stored(tmp_path)["items"][0]["createdAt"])  # type: ignore[index]
    assert abs((datetime.now(UTC) - created).total_seconds()) < 60


async def test_two_tools_on_the_same_root_do_not_lose_each_others_tasks(tmp_path: Path) -> None:
    first, second = ManageTodoTool(tmp_path), ManageTodoTool(tmp_path)
    await asyncio.gather(
        *(tool.invoke({"action": "add", "task": f"t{n}"}) for n in range(6) for tool in (first, second))
    )
    assert len(_stored(tmp_path)["items"]) == 12  # type: ignore[arg-type]
