"""The manage_todo tool: a task list with statuses, priorities and dependencies, kept in ``.ironhive/todo.json``."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from ironhive.adapters.atomic_files import write_atomically
from ironhive.adapters.tools.arguments import Arguments, object_schema
from ironhive.adapters.tools.base import BuiltInTool
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.ports.chat import JsonValue
from ironhive.ports.system import Clock

STATUSES = ("pending", "in_progress", "blocked", "completed")
PRIORITIES = ("low", "medium", "high")
ACTIONS = ("add", "list", "update", "complete", "remove", "clear")

_STATUS_ALIASES = {
    **{status: status for status in STATUSES},
    "p": "pending",
    "todo": "pending",
    "open": "pending",
    "i": "in_progress",
    "inprogress": "in_progress",
    "in-progress": "in_progress",
    "in progress": "in_progress",
    "started": "in_progress",
    "active": "in_progress",
    "doing": "in_progress",
    "b": "blocked",
    "c": "completed",
    "complete": "completed",
    "done": "completed",
    "finished": "completed",
}
_PRIORITY_ALIASES = {
    **{priority: priority for priority in PRIORITIES},
    "l": "low",
    "m": "medium",
    "med": "medium",
    "normal": "medium",
    "h": "high",
}
_PRIORITY_RANK = {"high": 0, "medium": 1, "low": 2}

_LOCK_SECONDS = 30.0
"""How long a change waits for another one (another agent on the same project) before it gives up."""


@dataclass(slots=True)
class TodoItem:
    """One task of the list."""

    id: int
    task: str
    status: str = "pending"
    priority: str = "medium"
    dependencies: list[int] = field(default_factory=list)
    created_at: str = ""
    updated_at: str | None = None
    completed_at: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        """The item as stored: camelCase keys, absent values left out."""
        data: dict[str, JsonValue] = {"id": self.id, "task": self.task, "status": self.status}
        data["priority"] = self.priority
        if self.dependencies:
            dependencies: list[JsonValue] = [*self.dependencies]
            data["dependencies"] = dependencies
        for key, value in (
            ("createdAt", self.created_at),
            ("updatedAt", self.updated_at),
            ("completedAt", self.completed_at),
        ):
            if value:
                data[key] = value
        return data


def parse_status(text: str) -> str:
    """A status from its name or an alias (``done``, ``in-progress``, ...), case-insensitive."""
    key = text.strip().lower()
    status = _STATUS_ALIASES.get(key) or _STATUS_ALIASES.get(key.replace(" ", "_").replace("-", "_"))
    if status is None:
        raise ToolArgumentError(f"Unknown status '{text}'. Use one of: {', '.join(STATUSES)}", parameter="status")
    return status


def parse_priority(text: str) -> str:
    """A priority from its name or an alias (``h``, ``normal``, ...), case-insensitive."""
    priority = _PRIORITY_ALIASES.get(text.strip().lower())
    if priority is None:
        raise ToolArgumentError(f"Unknown priority '{text}'. Use one of: {', '.join(PRIORITIES)}", parameter="priority")
    return priority


def parse_dependencies(text: str) -> list[int]:
    """Task ids from a comma-separated list such as ``"1, 2"`` or ``"#1,#2"``."""
    ids: list[int] = []
    for part in text.split(","):
        token = part.strip().lstrip("#")
        if not token:
            continue
        if not token.isdigit():
            raise ToolArgumentError(
                f"Dependencies must be comma-separated task ids such as '1,2'; got '{part.strip()}'",
                parameter="dependencies",
            )
        if int(token) not in ids:
            ids.append(int(token))
    return ids


class ManageTodoTool(BuiltInTool):
    """``manage_todo``: add, list, update, complete, remove and clear tasks in ``<root>/.ironhive/todo.json``.

    Args:
        root: The working directory; the list lives in its ``.ironhive`` folder.
        clock: Where timestamps come from (the system clock when omitted).
    """

    name: ClassVar[str] = "manage_todo"
    description: ClassVar[str] = (
        "Track work as a todo list: add, list, update, complete, remove tasks, or clear the completed ones. "
        "Tasks have ids, a status, a priority and optional dependencies on other tasks."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
            "task": {"type": "string", "description": "Task description (required for 'add'; new text for 'update')."},
            "id": {"type": "integer", "minimum": 1, "description": "Task id (required for update, complete, remove)."},
            "status": {"type": "string", "description": "For 'update': pending, in_progress, blocked or completed."},
            "priority": {"type": "string", "description": "For 'add' or 'update': low, medium (default) or high."},
            "dependencies": {
                "type": "string",
                "description": "Comma-separated ids of tasks that must be completed first, e.g. '1,2'.",
            },
        },
        required=["action"],
    )

    def __init__(self, root: Path, *, clock: Clock | None = None) -> None:
        super().__init__(root)
        self._clock = clock

    @property
    def file(self) -> Path:
        """Where the list is stored."""
        return self.root / ".ironhive" / "todo.json"

    async def _run(self, arguments: Arguments) -> str:
        return await asyncio.to_thread(self._apply_locked, arguments)

    def _apply_locked(self, arguments: Arguments) -> str:
        """Run one action; a change holds ``todo.json.lock`` from load to save.

        Two agents on the same project (two processes, or two tool instances in one) would otherwise each load, change
        and save their own copy, and the later save would drop the other's change. Saves are atomic, so ``list``
        needs no lock.
        """
        if arguments.string("action") == "list":
            return self._apply(arguments)
        from filelock import FileLock, Timeout

        self.file.parent.mkdir(parents=True, exist_ok=True)
        try:
            with FileLock(self.file.with_name(self.file.name + ".lock"), timeout=_LOCK_SECONDS):
                return self._apply(arguments)
        except Timeout as error:
            raise ToolError(f"The todo list {self.file} is being changed by another process; try again") from error

    def _apply(self, arguments: Arguments) -> str:
        action = arguments.string("action")
        if action == "list":
            return _render(self._load()[1])
        if action == "add":
            return self._add(arguments)
        if action == "clear":
            return self._clear()
        task_id = arguments.optional_integer("id")
        if task_id is None:
            raise ToolArgumentError(
                f"Missing required parameter 'id' for action '{action}' of tool '{self.name}'", parameter="id"
            )
        next_id, items = self._load()
        item = next((candidate for candidate in items if candidate.id == task_id), None)
        if item is None:
            raise ToolError(f"Task #{task_id} not found.")
        if action == "remove":
            items.remove(item)
            self._save(next_id, items)
            return f"Removed task #{task_id}: {item.task}"
        if action == "complete":
            return self._complete(next_id, items, item)
        return self._update(next_id, items, item, arguments)

    def _add(self, arguments: Arguments) -> str:
        task = (arguments.optional_string("task") or "").strip()
        if not task:
            raise ToolArgumentError(
                f"Missing required parameter 'task' for action 'add' of tool '{self.name}'", parameter="task"
            )
        next_id, items = self._load()
        item = TodoItem(id=next_id, task=task, created_at=self._now())
        if status := arguments.optional_string("status"):
            item.status = parse_status(status)
        if priority := arguments.optional_string("priority"):
            item.priority = parse_priority(priority)
        if (dependencies := arguments.optional_string("dependencies")) is not None:
            item.dependencies = _known_dependencies(parse_dependencies(dependencies), items, item.id)
        if item.status == "completed":
            item.completed_at = item.created_at
        items.append(item)
        self._save(next_id + 1, items)
        return f"Added task #{item.id}: {item.task}"

    def _update(self, next_id: int, items: list[TodoItem], item: TodoItem, arguments: Arguments) -> str:
        task = (arguments.optional_string("task") or "").strip()
        status = arguments.optional_string("status")
        priority = arguments.optional_string("priority")
        dependencies = arguments.optional_string("dependencies")
        if not task and not status and not priority and dependencies is None:
            raise ToolError("Nothing to update: give task, status, priority or dependencies")
        now = self._now()
        if task:
            item.task = task
        if status:
            item.status = parse_status(status)
            item.completed_at = (item.completed_at or now) if item.status == "completed" else None
        if priority:
            item.priority = parse_priority(priority)
        if dependencies is not None:
            item.dependencies = _known_dependencies(parse_dependencies(dependencies), items, item.id)
        item.updated_at = now
        self._save(next_id, items)
        return f"Updated task #{item.id}: {item.task} [{item.status}]"

    def _complete(self, next_id: int, items: list[TodoItem], item: TodoItem) -> str:
        if item.status == "completed":
            return f"Task #{item.id} is already completed: {item.task}"
        statuses = {candidate.id: candidate.status for candidate in items}
        unfinished = [dep for dep in item.dependencies if statuses.get(dep, "completed") != "completed"]
        if unfinished:
            listed = ", ".join(f"#{dep}" for dep in unfinished)
            return (
                f"Warning: Task #{item.id} has incomplete dependencies: {listed}. It was not completed; complete "
                "those first, or use 'update' with status='completed' to force it."
            )
        now = self._now()
        item.status = "completed"
        item.completed_at = now
        item.updated_at = now
        self._save(next_id, items)
        return f"Completed task #{item.id}: {item.task}"

    def _clear(self) -> str:
        next_id, items = self._load()
        remaining = [item for item in items if item.status != "completed"]
        cleared = len(items) - len(remaining)
        if not cleared:
            return "No completed tasks to clear."
        self._save(next_id, remaining)
        return f"Cleared {cleared} completed task{'' if cleared == 1 else 's'}. {len(remaining)} remaining."

    def _now(self) -> str:
        moment = self._clock.now() if self._clock is not None else datetime.now(UTC)
        return moment.isoformat()

    def _load(self) -> tuple[int, list[TodoItem]]:
        """The next id to hand out and the stored items (none when there is no file yet)."""
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 1, []
        try:
            data = json.loads(text)
            items = [_item_from_json(entry) for entry in data.get("items", [])]
            stored_next = int(data.get("nextId", 1))
        except (ValueError, TypeError, AttributeError, KeyError, ToolArgumentError) as exc:
            # Refuse rather than start empty: the next save would silently destroy the user's list.
            raise ToolError(f"The todo file {self.file} is malformed ({exc}); fix or delete it") from exc
        return max([stored_next, *(item.id + 1 for item in items)]), items

    def _save(self, next_id: int, items: list[TodoItem]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        payload = {"nextId": next_id, "items": [item.to_json() for item in items]}
        write_atomically(self.file, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def _known_dependencies(ids: list[int], items: list[TodoItem], own_id: int) -> list[int]:
    if own_id in ids:
        raise ToolArgumentError(f"Task #{own_id} cannot depend on itself", parameter="dependencies")
    known = {item.id for item in items}
    unknown = [dep for dep in ids if dep not in known]
    if unknown:
        raise ToolArgumentError(
            f"Unknown dependency id(s): {', '.join(f'#{dep}' for dep in unknown)}", parameter="dependencies"
        )
    return ids


def _item_from_json(entry: dict[str, JsonValue]) -> TodoItem:
    def text(key: str) -> str | None:
        value = entry.get(key)
        return value if isinstance(value, str) else None

    raw_dependencies = entry.get("dependencies")
    dependencies = raw_dependencies if isinstance(raw_dependencies, list) else []
    return TodoItem(
        id=int(str(entry["id"])),
        task=str(entry.get("task", "")),
        status=parse_status(text("status") or "pending"),
        priority=parse_priority(text("priority") or "medium"),
        dependencies=[int(str(dep).lstrip("#")) for dep in dependencies],
        created_at=text("createdAt") or "",
        updated_at=text("updatedAt"),
        completed_at=text("completedAt"),
    )


def _render(items: list[TodoItem]) -> str:
    if not items:
        return "No todo items."
    lines = [f"Todo list ({len(items)} items):"]
    for status in STATUSES:
        group = sorted(
            (item for item in items if item.status == status), key=lambda i: (_PRIORITY_RANK[i.priority], i.id)
        )
        if not group:
            continue
        lines += ["", f"[{status}]"]
        for item in group:
            depends = f" (depends on: {', '.join(f'#{dep}' for dep in item.dependencies)})" if item.dependencies else ""
            lines.append(f"  #{item.id} [{item.priority}] {item.task}{depends}")
    return "\n".join(lines)
