"""Approvals over the wire with the real ``ironhive run --server`` process and a loopback OpenAI model."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import Event, ServerProcess, hitl_placement_errors, openai_environment

HEX32 = re.compile(r"[0-9a-f]{32}")
BARE_TURN_END = {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (tmp_path / "home").mkdir()
    return path


@pytest.fixture
def model() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer() as server:
        yield server


def serve(model: LoopbackOpenAIServer, work: Path, *flags: str) -> ServerProcess:
    return ServerProcess(*flags, cwd=work, home=work.parent / "home", env=openai_environment(model.base_url))


def started(server: ServerProcess) -> None:
    assert server.next_event()["type"] == "session_started"


def answer(server: ServerProcess, approved: bool, **fields: Any) -> None:
    server.send({"type": "hitl_response", "approved": approved, **fields})


def text_of(events: list[Event]) -> str:
    return "".join(event["content"] for event in events if event["type"] == "text_delta")


def of_type(events: list[Event], event_type: str) -> list[Event]:
    return [event for event in events if event["type"] == event_type]


def tool_message(request: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The tool result message for ``call_id`` in a chat-completions request body."""
    return next(
        message for message in request["messages"] if message["role"] == "tool" and message["tool_call_id"] == call_id
    )


WRITE_NOTES = ("call_w1", "write_file", {"path": "notes.md", "content": "# Notes\n"})
ECHO_COMMAND = ("call_x1", "execute_command", {"command": "echo approved-run"})


@pytest.mark.parametrize(
    ("call", "expected_request", "expected_output"),
    [
        (
            WRITE_NOTES,
            {
                "action": "Write file: notes.md",
                "target": "notes.md",
                "description": "Allow this operation?",
                "level": "medium",
            },
            "Successfully wrote to file: notes.md",
        ),
        (
            ECHO_COMMAND,
            {
                "action": "Shell command: echo approved-run",
                "target": "echo approved-run",
                "description": "Allow executing this command?",
                "level": "medium",
            },
            "Exit code: 0\nOutput:\napproved-run",
        ),
    ],
    ids=["write_file", "execute_command"],
)
def test_approved_call_runs_and_its_request_describes_it(
    model: LoopbackOpenAIServer,
    work: Path,
    call: tuple[str, str, dict[str, Any]],
    expected_request: dict[str, str],
    expected_output: str,
) -> None:
    call_id, tool, arguments = call
    model.enqueue_tool_calls([call]).enqueue_text("Done.")
    with serve(model, work) as server:
        started(server)
        server.user_message("please do it")
        before = server.events_until("hitl_request")
        request = before[-1]
        assert HEX32.fullmatch(request["id"])
        assert request == {
            "type": "hitl_request",
            "id": request["id"],
            **expected_request,
            "tool_name": tool,
            "arguments": arguments,
            "call_id": call_id,
        }
        assert before[-2] == {"type": "tool_start", "tool": tool, "input": None, "call_id": call_id}
        assert server.events_within(0.3) == []  # the call waits for the answer
        assert not (work / "notes.md").exists()
        answer(server, True, id=request["id"])
        after = server.read_turn()
    assert after[0] == {
        "type": "tool_end",
        "tool": tool,
        "success": True,
        "output": expected_output,
        "call_id": call_id,
    }
    assert text_of(after) == "Done."
    assert after[-1] == BARE_TURN_END and len(of_type(after, "turn_end")) == 1
    assert hitl_placement_errors(before + after) == []
    if tool == "write_file":
        assert (work / "notes.md").read_text() == "# Notes\n"
    assert tool_message(model.requests[1], call_id)["content"] == expected_output


def test_rejection_with_a_reason_reaches_the_model_and_nothing_runs(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([WRITE_NOTES]).enqueue_text("Understood, I will not write it.")
    with serve(model, work) as server:
        started(server)
        server.user_message("write the notes")
        request = server.events_until("hitl_request")[-1]
        answer(server, False, reason="not in this repo", id=request["id"])
        after = server.read_turn()
    refusal = "Approval rejected: not in this repo"
    assert after[0] == {
        "type": "tool_end",
        "tool": "write_file",
        "success": False,
        "output": refusal,
        "call_id": "call_w1",
    }
    assert text_of(after) == "Understood, I will not write it."
    assert not (work / "notes.md").exists()
    assert tool_message(model.requests[1], "call_w1")["content"] == refusal


def test_rejection_without_a_reason_and_without_an_id(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([ECHO_COMMAND]).enqueue_text("Fine.")
    with serve(model, work) as server:
        started(server)
        server.user_message("run it")
        server.events_until("hitl_request")
        server.send({"type": "hitl_response", "approved": False})  # no id: answers the only pending request
        after = server.read_turn()
    refusal = "Approval rejected: the operator declined"
    assert after[0]["success"] is False and after[0]["output"] == refusal
    assert tool_message(model.requests[1], "call_x1")["content"] == refusal


def test_two_asking_calls_of_one_round_are_asked_in_turn_and_answered_by_id(
    model: LoopbackOpenAIServer, work: Path
) -> None:
    """Calls run one after another, so the second request is written only once the first is answered."""
    model.enqueue_tool_calls(
        [
            ("call_a", "write_file", {"path": "notes.md", "content": "first"}),
            ("call_b", "write_file", {"path": "todo.md", "content": "draft"}),
        ]
    ).enqueue_text("Both handled.")
    with serve(model, work) as server:
        started(server)
        server.user_message("write two files")
        first_part = server.events_until("hitl_request")
        first = first_part[-1]
        assert [e["type"] for e in first_part] == ["tool_start", "tool_start", "hitl_request"]
        assert first["call_id"] == "call_a"
        answer(server, True, id="0" * 32)  # an unknown id is dropped; the call keeps waiting
        assert server.events_within(0.3) == []
        answer(server, True, id=first["id"], modified_arguments={"path": "docs/moved.md"})
        second_part = server.events_until("hitl_request")
        second = second_part[-1]
        assert second["call_id"] == "call_b" and second["id"] != first["id"] and HEX32.fullmatch(second["id"])
        assert second_part[0] == {
            "type": "tool_end",
            "tool": "write_file",
            "success": True,
            "output": "Successfully wrote to file: docs/moved.md",
            "call_id": "call_a",
        }
        answer(server, True, id=second["id"], modified_arguments={"content": "final"})
        rest = server.read_turn()
    assert rest[0]["call_id"] == "call_b" and rest[0]["success"] is True
    assert hitl_placement_errors(first_part + second_part + rest) == []
    assert (work / "docs" / "moved.md").read_text() == "first"  # path replaced, content kept
    assert not (work / "notes.md").exists()
    assert (work / "todo.md").read_text() == "final"  # content replaced, path kept


def test_no_answer_within_the_timeout_is_a_rejection(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([WRITE_NOTES]).enqueue_text("Timed out, then.").enqueue_text("Still here.")
    with serve(model, work, "--approval-timeout", "0.5") as server:
        started(server)
        server.user_message("write the notes")
        request = server.events_until("hitl_request")[-1]
        asked = time.monotonic()
        after = server.read_turn()
        waited = time.monotonic() - asked
        answer(server, True, id=request["id"])  # too late: dropped
        assert server.events_within(0.3) == []
        server.user_message("are you there?")
        later = server.read_turn()
    refusal = "Approval rejected: no answer to the approval request within 0.5s"
    assert after[0] == {
        "type": "tool_end",
        "tool": "write_file",
        "success": False,
        "output": refusal,
        "call_id": "call_w1",
    }
    assert 0.3 <= waited < 10  # not at once (the wait starts just before the request is written)
    assert not (work / "notes.md").exists()
    assert text_of(later) == "Still here."
    assert tool_message(model.requests[1], "call_w1")["content"] == refusal


def test_cancel_while_waiting_ends_the_turn_and_the_session_goes_on(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([WRITE_NOTES]).enqueue_text("Still here.")
    with serve(model, work) as server:
        started(server)
        server.user_message("write the notes")
        request = server.events_until("hitl_request")[-1]
        server.send({"type": "cancel"})
        cancelled = server.read_turn()
        answer(server, True, id=request["id"])  # the wait is gone: dropped
        assert server.events_within(0.3) == []
        server.user_message("never mind")
        later = server.read_turn()
    assert cancelled == [BARE_TURN_END]  # no error, no tool_end: the call never ran
    assert not (work / "notes.md").exists()
    assert text_of(later) == "Still here."
    assert of_type(later, "error") == []
    users = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["never mind"]  # the cancelled turn left the history as it was


def test_end_of_input_while_waiting_rejects_at_once_and_exits_cleanly(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([WRITE_NOTES]).enqueue_text("The client left.")
    with serve(model, work) as server:
        started(server)
        server.user_message("write the notes")
        server.events_until("hitl_request")
        closed = time.monotonic()
        server.close_stdin()
        rest = server.remaining_events(timeout=10)
        code = server.wait(timeout=10)
        took = time.monotonic() - closed
    refusal = "Approval rejected: the client connection closed before answering"
    assert rest[0] == {
        "type": "tool_end",
        "tool": "write_file",
        "success": False,
        "output": refusal,
        "call_id": "call_w1",
    }
    assert text_of(rest) == "The client left."
    assert rest[-1]["type"] == "turn_end" and len(of_type(rest, "turn_end")) == 1
    assert code == 0
    assert took < 5
    assert not (work / "notes.md").exists()
    assert tool_message(model.requests[1], "call_w1")["content"] == refusal


def test_always_approve_is_remembered_per_tool_for_the_session(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([("call_1", "write_file", {"path": "a.md", "content": "A"})]).enqueue_text("one")
    model.enqueue_tool_calls([("call_2", "write_file", {"path": "b.md", "content": "B"})]).enqueue_text("two")
    model.enqueue_tool_calls([("call_3", "execute_command", {"command": "echo hi"})]).enqueue_text("three")
    with serve(model, work) as server:
        started(server)
        server.user_message("write a")
        request = server.events_until("hitl_request")[-1]
        answer(server, True, id=request["id"], always_approve=True)
        first = server.read_turn()
        server.user_message("write b")
        second = server.read_turn()
        server.user_message("run echo")
        other_tool = server.events_until("hitl_request")[-1]
        answer(server, False, id=other_tool["id"])
        third = server.read_turn()
    assert first[0]["success"] is True and (work / "a.md").read_text() == "A"
    assert of_type(second, "hitl_request") == []  # not asked again
    assert of_type(second, "tool_end") == [
        {
            "type": "tool_end",
            "tool": "write_file",
            "success": True,
            "output": "Successfully wrote to file: b.md",
            "call_id": "call_2",
        }
    ]
    assert (work / "b.md").read_text() == "B"
    assert other_tool["tool_name"] == "execute_command"  # remembered per tool: another tool is still asked
    assert third[0]["output"] == "Approval rejected: the operator declined"
