"""manage_todo from several processes on one project: each change holds the file lock, so no task is lost."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ironhive.adapters.tools.todo import ManageTodoTool
from tests.support.processes import run_in_processes

TASKS_PER_PROCESS = 25
PROCESSES = 3


def add_tasks(root: str, prefix: str, count: int) -> None:
    async def add_all() -> None:
        tool = ManageTodoTool(Path(root))
        for index in range(count):
            await tool.invoke({"action": "add", "task": f"{prefix}-{index}"})
            if index % 5 == 4:
                await tool.invoke({"action": "complete", "id": 1})  # a change of an item others change too

    asyncio.run(add_all())


def test_processes_adding_to_the_same_list_lose_no_task_and_share_no_id(tmp_path: Path) -> None:
    run_in_processes(add_tasks, [(str(tmp_path), f"p{number}", TASKS_PER_PROCESS) for number in range(PROCESSES)])
    stored = json.loads((tmp_path / ".ironhive" / "todo.json").read_text())
    tasks = [item["task"] for item in stored["items"]]
    expected = {f"p{number}-{index}" for number in range(PROCESSES) for index in range(TASKS_PER_PROCESS)}
    assert sorted(tasks) == sorted(expected)
    ids = [item["id"] for item in stored["items"]]
    assert sorted(ids) == list(range(1, PROCESSES * TASKS_PER_PROCESS + 1))
    assert stored["nextId"] == PROCESSES * TASKS_PER_PROCESS + 1
    assert not [path.name for path in (tmp_path / ".ironhive").iterdir() if path.name.endswith(".tmp")]
