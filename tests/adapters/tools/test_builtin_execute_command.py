"""execute_command: results, output caps, and stopping the whole process group on timeout and cancellation."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from ironhive.adapters.tools.shell import ExecuteCommandTool, HeadTailBuffer, process_group_alive
from ironhive.domain.errors import ToolArgumentError, ToolError

# A command that leaves two children in its group and records every pid (its own last).
FAMILY = "sleep 30 & echo $! >> pids; sleep 30 & echo $! >> pids; echo $$ >> pids; echo started; wait"


def _running(pid: int) -> bool:
    """Whether a process exists and is not a zombie (nothing may reap orphans in a container)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _group_members(group: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[2] == str(group) and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


def _read_pids(pid_file: Path) -> list[int]:
    return [int(line) for line in pid_file.read_text().split()] if pid_file.exists() else []


async def _wait_for_pids(pid_file: Path, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = await asyncio.to_thread(_read_pids, pid_file)
        if len(pids) >= count:
            return pids
        await asyncio.sleep(0.02)
    raise AssertionError("the command did not record its pids")


def _assert_all_gone(pids: list[int]) -> None:
    group = pids[-1]
    assert not [pid for pid in pids if _running(pid)]
    assert _group_members(group) == []
    assert not process_group_alive(group)


async def test_success_reports_exit_code_and_output(tmp_path: Path) -> None:
    result = await ExecuteCommandTool(tmp_path).invoke({"command": "echo hello; echo world"})
    assert result == "Exit code: 0\nOutput:\nhello\nworld"


async def test_non_zero_exit_and_stderr_are_a_normal_result(tmp_path: Path) -> None:
    result = await ExecuteCommandTool(tmp_path).invoke({"command": "echo out; echo oops >&2; exit 3"})
    assert result == "Exit code: 3\nOutput:\nout\nStderr:\noops"


async def test_no_output_is_said_plainly(tmp_path: Path) -> None:
    assert await ExecuteCommandTool(tmp_path).invoke({"command": "true"}) == "Exit code: 0\nOutput:\n(no output)"


async def test_runs_in_the_root_with_empty_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    result = await ExecuteCommandTool(tmp_path).invoke({"command": "pwd; cat; echo after-cat"})
    assert result == f"Exit code: 0\nOutput:\n{tmp_path}\nafter-cat"


async def test_runs_in_its_own_process_group(tmp_path: Path) -> None:
    result = await ExecuteCommandTool(tmp_path).invoke({"command": "echo $$ $(ps -o pgid= -p $$)"})
    pid, group = result.splitlines()[2].split()
    assert pid == group
    assert int(group) != os.getpgrp()


async def test_a_shell_killed_by_a_signal_says_so(tmp_path: Path) -> None:
    result = await ExecuteCommandTool(tmp_path).invoke({"command": "kill -9 $$"})
    assert result.startswith("Exit code: -9 (killed by SIGKILL)")


async def test_long_output_keeps_head_and_tail_with_a_marker(tmp_path: Path) -> None:
    command = "printf START; head -c 100000 /dev/zero | tr '\\0' x; printf END"
    result = await ExecuteCommandTool(tmp_path).invoke({"command": command})
    output = result.split("Output:\n", 1)[1]
    head, tail = output.split("\n[... 50008 chars omitted ...]\n")
    assert head == "START" + "x" * 19_995
    assert tail == "x" * 29_997 + "END"


def test_head_tail_buffer_keeps_exact_ends_across_chunks() -> None:
    buffer = HeadTailBuffer(head=5, tail=4)
    for chunk in ["abc", "defg", "hij", "klmnop", "qr"]:
        buffer.append(chunk)
    assert buffer.render() == "abcde\n[... 9 chars omitted ...]\nopqr"


def test_head_tail_buffer_under_the_limits_is_unchanged() -> None:
    buffer = HeadTailBuffer(head=5, tail=4)
    buffer.append("abcdefgh")
    assert buffer.render() == "abcdefgh"


async def test_timeout_raises_with_partial_output_and_kills_the_group(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        await ExecuteCommandTool(tmp_path).invoke({"command": FAMILY, "timeout_ms": 700})
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert message.startswith("Command timed out after 700ms")
    assert "Output so far:\nstarted" in message
    _assert_all_gone(_read_pids(tmp_path / "pids"))


async def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    command = "trap '' TERM; " + FAMILY
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"Command timed out after 500ms"):
        await ExecuteCommandTool(tmp_path, kill_grace=0.3).invoke({"command": command, "timeout_ms": 500})
    assert time.monotonic() - started < 5
    _assert_all_gone(_read_pids(tmp_path / "pids"))


async def test_cancellation_kills_the_group_and_propagates(tmp_path: Path) -> None:
    task = asyncio.create_task(ExecuteCommandTool(tmp_path).invoke({"command": FAMILY}))
    pids = await _wait_for_pids(tmp_path / "pids", 3)
    assert all(_running(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _assert_all_gone(pids)


async def test_background_children_holding_the_output_do_not_hang_the_result(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await ExecuteCommandTool(tmp_path).invoke({"command": "sleep 3 & echo $! > bg; echo done"})
    assert time.monotonic() - started < 2.5
    assert result.startswith("Exit code: 0\nOutput:\ndone")
    assert "background processes still hold the output open" in result
    os.kill(int((tmp_path / "bg").read_text()), signal.SIGKILL)


async def test_empty_command_and_bad_timeout_are_refused(tmp_path: Path) -> None:
    tool = ExecuteCommandTool(tmp_path)
    with pytest.raises(ToolError, match=r"command is empty"):
        await tool.invoke({"command": "   "})
    with pytest.raises(ToolArgumentError, match=r"'timeout_ms'"):
        await tool.invoke({"command": "true", "timeout_ms": 0})
    with pytest.raises(ToolArgumentError, match=r"required parameter 'command'"):
        await tool.invoke({})


async def test_timeout_given_as_a_string_is_coerced(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"Command timed out after 200ms"):
        await ExecuteCommandTool(tmp_path).invoke({"command": "sleep 5", "timeout_ms": "200"})


async def test_missing_working_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"Working directory not found"):
        await ExecuteCommandTool(tmp_path / "gone").invoke({"command": "true"})
