"""The real ``ironhive run --server``: the turn-stream defects of issue 16 stay fixed (one test each)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import clean_environment, ironhive_executable, run_ironhive
from tests.support.server_process import Event, ServerProcess, script

SESSION_ID = re.compile(r"[0-9a-f]+-[0-9a-f]{8}")
BARE_TURN_END = {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None}


def scripted(work: Path, steps: Sequence[object] | None = None, *flags: str) -> ServerProcess:
    model = ("-m", script(work, steps)) if steps is not None else ()
    return ServerProcess("--provider", "scripted", *model, *flags, cwd=work, home=work.parent / "home")


def started(server: ServerProcess) -> Event:
    event = server.next_event()
    assert event["type"] == "session_started"
    return event


def types_of(events: list[Event]) -> list[str]:
    return [event["type"] for event in events]


def sessions(work: Path) -> list[dict[str, Any]]:
    listed = run_ironhive("sessions", "-o", "json", cwd=work, home=work.parent / "home")
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert isinstance(found, list)
    return found


# --- D1 ---------------------------------------------------------------------------------------------------------------


def test_d1_a_wrong_typed_field_is_one_error_and_a_turn_end_and_integral_floats_are_accepted(work: Path) -> None:
    with scripted(work) as server:  # the echo model: any model call would answer "You said: ..."
        started(server)
        server.send_raw(b'{"type":"user_message","content":"x","options":{"temperature":"hot"}}\n')
        server.send_raw(b'{"type":"user_message","content":"y","options":{"tool_names":"read_file"}}\n')
        server.send_raw(b'{"type":"user_message","content":"z","options":{"max_output_tokens":512.0}}\n')
        wrong_number = server.read_turn()
        wrong_list = server.read_turn()
        accepted = server.read_turn()
    assert wrong_number == [
        {"type": "error", "message": "Invalid user_message: options.temperature: Input should be a valid number"},
        BARE_TURN_END,
    ]
    assert types_of(wrong_list) == ["error", "turn_end"] and "options.tool_names" in wrong_list[0]["message"]
    assert "".join(e["content"] for e in accepted if e["type"] == "text_delta") == "You said: z"


# --- D3 ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("session_id", ["a/b", "x" * 300, "..", "-rf", "a\\b", "spaced id", ""])
@pytest.mark.parametrize("mode", ["--server", "--http"])
def test_d3_an_invalid_session_id_exits_2_at_start_up_without_leaking_the_home_path(
    work: Path, session_id: str, mode: str
) -> None:
    surface = ["--server"] if mode == "--server" else ["--http", "http://127.0.0.1:9"]
    home = work.parent / "home"
    args = ["run", *surface, f"--session-id={session_id}", "--provider", "scripted"]
    completed = run_ironhive(*args, cwd=work, home=home)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.startswith("Error: --session-id ")
    assert "is not a valid session id: use 1 to 128 letters, digits, '.', '_' or '-'" in completed.stderr
    assert str(home) not in completed.stderr and completed.stderr.count("\n") == 1


def test_d3_a_valid_session_id_of_128_characters_is_served(work: Path) -> None:
    session_id = "A1._-" + "z" * 123
    with scripted(work, None, "--session-id", session_id) as server:
        assert started(server)["session_id"] == session_id


# --- D4 ---------------------------------------------------------------------------------------------------------------

BUSY = {"error": {"message": "The model is busy.", "status": 503, "retryable": True}}


def test_d4_the_retry_notice_comes_before_the_wait_and_no_exhausted_without_a_chain(work: Path) -> None:
    steps = [BUSY, {"text": "Answered after the wait."}, BUSY, BUSY, BUSY]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("first")
        notice = server.next_event()
        noticed_at = time.monotonic()
        answer = server.read_turn()
        waited = time.monotonic() - noticed_at
        server.user_message("second")  # fails three times: no chain, so nothing is "exhausted"
        failed = server.read_turn(timeout=20)
    assert (notice["type"], notice["kind"], notice["attempt"]) == ("fallback", "retry", 1)
    assert notice["message"] == "The model is busy. — retrying in 1s"
    assert waited >= 0.7  # the notice arrived before the 1 s wait, not with the answer after it
    assert "".join(e["content"] for e in answer if e["type"] == "text_delta") == "Answered after the wait."
    assert [e["kind"] for e in failed if e["type"] == "fallback"] == ["retry", "retry"]
    assert types_of(failed)[-2:] == ["error", "turn_end"]


# --- D6 ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"tool_names": ["read_file"], "tool_mode": "require:write_file"},
            "Tool mode 'require:write_file' requires a tool this turn does not offer: tool_names are read_file. "
            "Add it to tool_names or choose another mode.",
        ),
        (
            {"tool_names": [], "tool_mode": "require_any"},
            "Tool mode 'require_any' requires a tool, but this turn offers none.",
        ),
        ({"max_output_tokens": 0}, "max_output_tokens must be at least 1, got 0."),
    ],
)
def test_d6_contradicting_options_are_an_error_up_front(work: Path, options: dict[str, Any], message: str) -> None:
    with scripted(work) as server:
        started(server)
        server.user_message("go", options=options)
        refused = server.read_turn()
        server.user_message("fine", options={"tool_names": ["read_file"], "tool_mode": "require:read_file"})
        accepted = server.read_turn()
    assert refused == [{"type": "error", "message": message}, BARE_TURN_END]
    assert "error" not in types_of(accepted)


# --- tool_start.input and the tool_end of a cancelled call ------------------------------------------------------------


def test_tool_start_carries_the_call_arguments(work: Path) -> None:
    (work / "README.md").write_text("# Demo\n")
    steps = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}, "id": "call_1"}]},
        {"text": "read"},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("read it")
        turn = server.read_turn()
    assert turn[0] == {"type": "tool_start", "tool": "read_file", "input": {"path": "README.md"}, "call_id": "call_1"}


def test_a_call_cancelled_while_running_gets_its_tool_end(work: Path) -> None:
    steps = [
        {"tool_calls": [{"name": "execute_command", "arguments": {"command": "sleep 30"}, "id": "call_s"}]},
        {"text": "never"},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("sleep")
        request = server.events_until("hitl_request")[-1]
        server.send({"type": "hitl_response", "id": request["id"], "approved": True})
        assert server.events_within(0.5) == []  # the command runs
        server.send({"type": "cancel"})
        rest = server.read_turn(timeout=10)
    assert rest[0]["type"] == "tool_end" and rest[0]["call_id"] == "call_s" and rest[0]["success"] is False
    assert rest[0]["output"].startswith("Cancelled")
    assert rest[1:] == [BARE_TURN_END]


# --- sessions ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["shutdown", "end of input"])
def test_a_server_session_has_a_sortable_id_and_is_ended_afterwards(work: Path, ending: str) -> None:
    with scripted(work) as server:
        session_id = started(server)["session_id"]
        server.user_message("hello")
        server.read_turn()
        if ending == "shutdown":
            server.send({"type": "shutdown"})
        else:
            server.close_stdin()
        assert server.wait() == 0
    assert SESSION_ID.fullmatch(session_id)
    [stored] = sessions(work)
    assert (stored["id"], stored["status"], stored["messageCount"]) == (session_id, "ended", 2)


def test_a_server_session_without_a_turn_leaves_nothing_behind(work: Path) -> None:
    with scripted(work) as server:
        started(server)
        server.close_stdin()
        assert server.wait() == 0
    assert sessions(work) == []


def test_a_killed_cli_run_leaves_no_active_empty_session(work: Path) -> None:
    steps = [{"deltas": ["slow "] * 100, "delay_seconds": 0.1}]
    process = subprocess.Popen(
        [ironhive_executable(), "-p", "hi", "--provider", "scripted", "-m", script(work, steps), "-o", "jsonl"],
        cwd=work,
        env=clean_environment(work.parent / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    first = json.loads(process.stdout.readline())
    assert first["type"] == "start" and SESSION_ID.fullmatch(first["sessionId"])
    process.stdout.readline()  # the turn is under way
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.stdout.close()
    assert sessions(work) == []


# --- usage errors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_an_invalid_approval_timeout_exits_2(work: Path, value: str) -> None:
    completed = run_ironhive(
        "run", "--server", "--approval-timeout", value, "--provider", "scripted", cwd=work, home=work.parent / "home"
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("Error: --approval-timeout must be a positive number of seconds")
    assert completed.stdout == ""
