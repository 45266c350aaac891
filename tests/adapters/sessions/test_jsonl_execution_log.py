"""JsonlExecutionLog: the exact camelCase lines of turn_start, tool_call and turn_end, appended per session."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from ironhive.adapters.sessions.execution_log import JsonlExecutionLog
from ironhive.ports.sessions import ExecutionLog
from tests.support.fakes import FakeClock

SESSION = "19901b8a4c0-1a2b3c4d"


def file_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=datetime(2026, 8, 31, 12, 0, 0, 250000, tzinfo=UTC))


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".ironhive" / "logs"


async def test_a_turn_writes_its_lines_in_order(logs: Path, clock: FakeClock, snapshot: SnapshotAssertion) -> None:
    log = JsonlExecutionLog(logs, clock=clock)
    assert isinstance(log, ExecutionLog)
    await log.turn_start(SESSION, 1, "List the files, please.")
    clock.advance(1.5)
    await log.tool_call(SESSION, 1, 1, "call_1", "list_directory", {"path": ".", "depth": 2, "hidden": False})
    await log.tool_call(SESSION, 1, 2, "call_2", "read_file", '{"path": ')
    await log.tool_call(SESSION, 1, 3, "call_3", "mcp_tool", None)
    clock.advance(2)
    await log.turn_end(SESSION, 1, response_length=26, tool_calls=3, input_tokens=812, output_tokens=45)
    await log.turn_end(SESSION, 2, response_length=0, tool_calls=0, input_tokens=None, output_tokens=None)
    path = logs / f"{SESSION}.execlog.jsonl"
    assert log.path_for(SESSION) == path
    text = path.read_text(encoding="utf-8")
    assert text == snapshot
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["type"] for line in lines] == [
        "turn_start",
        "tool_call",
        "tool_call",
        "tool_call",
        "turn_end",
        "turn_end",
    ]
    assert lines[0]["timestamp"] == "2026-08-31T12:00:00.2500000Z"


async def test_the_prompt_is_cut_to_500_characters(logs: Path, clock: FakeClock) -> None:
    log = JsonlExecutionLog(logs, clock=clock)
    await log.turn_start(SESSION, 1, "é" * 499 + "xyz")
    (line,) = log.path_for(SESSION).read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["prompt"] == "é" * 499 + "x"


async def test_each_session_has_its_own_file_and_lines_are_appended(logs: Path, clock: FakeClock) -> None:
    log = JsonlExecutionLog(logs, clock=clock)
    await log.turn_start("a-1", 1, "first")
    await log.turn_start("b-2", 1, "other")
    await JsonlExecutionLog(logs, clock=clock).turn_start("a-1", 2, "second")
    assert file_names(logs) == ["a-1.execlog.jsonl", "b-2.execlog.jsonl"]
    prompts = [json.loads(line)["prompt"] for line in (logs / "a-1.execlog.jsonl").read_text().splitlines()]
    assert prompts == ["first", "second"]


async def test_concurrent_writes_never_interleave_within_a_line(logs: Path, clock: FakeClock) -> None:
    log = JsonlExecutionLog(logs, clock=clock)
    big = {"content": "z" * 100_000}
    await asyncio.gather(*(log.tool_call(SESSION, 1, step, f"c{step}", "write_file", big) for step in range(40)))
    lines = log.path_for(SESSION).read_text().splitlines()
    assert sorted(json.loads(line)["step"] for line in lines) == list(range(40))
    assert all(json.loads(line)["arguments"] == big for line in lines)


@pytest.mark.parametrize("session_id", ["", "..", "a/b", "a\\b"])
async def test_a_session_id_that_is_not_a_file_name_is_refused(logs: Path, session_id: str) -> None:
    log = JsonlExecutionLog(logs, clock=FakeClock())
    with pytest.raises(ValueError, match="session id"):
        await log.turn_start(session_id, 1, "x")
    assert file_names(logs.parent) == []
