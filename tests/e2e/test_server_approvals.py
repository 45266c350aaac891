"""Approvals over the wire with the real ``ironhive run --server`` process (loopback OpenAI or scripted model)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import Event, ServerProcess, hitl_placement_errors, openai_environment

HEX32 = re.compile(r"[0-9a-f]{32}")
BARE_TURN_END = {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None}


@pytest.fixture
def model() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer() as server:
        yield server


def serve(model: LoopbackOpenAIServer, work: Path, *flags: str) -> ServerProcess:
    return ServerProcess(*flags, cwd=work, home=work.parent / "home", env=openai_environment(model.base_url))


def scripted(work: Path, steps: Sequence[object], *flags: str) -> ServerProcess:
    """The server on the scripted model, its steps in a file outside the working directory."""
    script = work.parent / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    return ServerProcess("--provider", "scripted", "-m", str(script), *flags, cwd=work, home=work.parent / "home")


def shell_call(call_id: str, command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute_command", "arguments": {"command": command}, "id": call_id}]}


def started(server: ServerProcess) -> None:
    assert server.next_event()["type"] == "session_started"


def answer(server: ServerProcess, approved: bool, **fields: Any) -> None:
    server.send({"type": "hitl_response", "approved": approved, **fields})


def dropped(reason: str) -> Event:
    return {"type": "error", "message": f"Approval answer dropped: {reason}"}


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
                "scope": "write_file: notes.md",
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
                "scope": "execute_command: echo *",
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
            **{key: value for key, value in expected_request.items() if key != "scope"},
            "tool_name": tool,
            "arguments": arguments,
            "call_id": call_id,
            "scope": expected_request["scope"],
        }
        assert before[-2] == {"type": "tool_start", "tool": tool, "input": arguments, "call_id": call_id}
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
        assert server.events_within(0.3) == [dropped(f"no approval request with id {'0' * 32} is waiting")]
        answer(server, True, id=first["id"], modified_arguments={"path": "docs/moved.md"})
        changed = server.next_event()  # the changed call is judged again: still an ask, so it is asked again
        assert (changed["type"], changed["call_id"], changed["arguments"]) == (
            "hitl_request",
            "call_a",
            {"path": "docs/moved.md", "content": "first"},
        )
        answer(server, True, id=changed["id"])
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
        again = server.next_event()
        assert (again["type"], again["arguments"]) == ("hitl_request", {"path": "todo.md", "content": "final"})
        answer(server, True, id=again["id"])
        rest = server.read_turn()
    assert rest[0]["call_id"] == "call_b" and rest[0]["success"] is True
    assert hitl_placement_errors([*first_part, changed, *second_part, again, *rest]) == []
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
        answer(server, True, id=request["id"])  # too late: dropped, and the client is told
        assert server.events_within(0.3) == [dropped(f"no approval request with id {request['id']} is waiting")]
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
        assert server.events_within(0.3) == [dropped(f"no approval request with id {request['id']} is waiting")]
        server.user_message("never mind")
        later = server.read_turn()
    assert cancelled == [  # no error; the call that never ran still gets its tool_end
        {
            "type": "tool_end",
            "tool": "write_file",
            "success": False,
            "output": "Cancelled: the turn was cancelled before this call finished.",
            "call_id": "call_w1",
        },
        BARE_TURN_END,
    ]
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


def test_always_approve_is_remembered_for_the_shown_path_only(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_tool_calls([("call_1", "write_file", {"path": "a.md", "content": "A"})]).enqueue_text("one")
    model.enqueue_tool_calls([("call_2", "write_file", {"path": "a.md", "content": "B"})]).enqueue_text("two")
    model.enqueue_tool_calls([("call_3", "write_file", {"path": "b.md", "content": "C"})]).enqueue_text("three")
    with serve(model, work) as server:
        started(server)
        server.user_message("write a")
        request = server.events_until("hitl_request")[-1]
        assert request["scope"] == "write_file: a.md"
        answer(server, True, id=request["id"], always_approve=True)
        first = server.read_turn()
        server.user_message("write a again")
        second = server.read_turn()
        server.user_message("write b")
        other_path = server.events_until("hitl_request")[-1]
        answer(server, False, id=other_path["id"])
        third = server.read_turn()
    assert first[0]["success"] is True
    assert of_type(second, "hitl_request") == []  # not asked again
    assert of_type(second, "tool_end") == [
        {
            "type": "tool_end",
            "tool": "write_file",
            "success": True,
            "output": "Successfully wrote to file: a.md",
            "call_id": "call_2",
        }
    ]
    assert (work / "a.md").read_text() == "B"
    assert other_path["scope"] == "write_file: b.md"  # another path of the same tool is still asked
    assert third[0]["output"] == "Approval rejected: the operator declined"
    assert not (work / "b.md").exists()


# --- the scripted model: changed arguments, late answers, the scope of "always" ----------------------------------


def test_changed_arguments_that_the_rules_deny_stay_denied(work: Path) -> None:
    (work / "build").mkdir()
    (work / "build" / "keep.txt").write_text("kept")
    steps = [shell_call("c1", "echo hi"), {"text": "done"}]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("say hi")
        request = server.events_until("hitl_request")[-1]
        answer(server, True, id=request["id"], modified_arguments={"command": "rm -rf build; touch pwned"})
        turn = server.read_turn()
    assert of_type(turn, "hitl_request") == []  # a deny is not put to the human
    assert turn[0] == {
        "type": "tool_end",
        "tool": "execute_command",
        "success": False,
        "output": "Permission denied: Destructive command",
        "call_id": "c1",
    }
    assert (work / "build" / "keep.txt").read_text() == "kept"
    assert not (work / "pwned").exists()


def test_changed_arguments_that_need_approval_are_asked_again(work: Path) -> None:
    steps = [shell_call("c1", "echo hi"), {"text": "done"}]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("say hi")
        first = server.events_until("hitl_request")[-1]
        answer(server, True, id=first["id"], modified_arguments={"command": "touch made-by-edit"})
        second = server.next_event()
        assert not (work / "made-by-edit").exists()  # not before the changed call is approved
        answer(server, True, id=second["id"])
        turn = server.read_turn()
    assert first["scope"] == "execute_command: echo *"
    assert (second["type"], second["call_id"], second["arguments"], second["scope"]) == (
        "hitl_request",
        "c1",
        {"command": "touch made-by-edit"},
        "execute_command: touch *",
    )
    assert second["id"] != first["id"]
    assert turn[0]["call_id"] == "c1" and turn[0]["success"] is True
    assert (work / "made-by-edit").exists()


def test_changing_the_arguments_again_and_again_ends_in_a_rejection(work: Path) -> None:
    steps = [shell_call("c1", "echo hi"), {"text": "done"}]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("say hi")
        asked = [server.events_until("hitl_request")[-1]]
        for name in ("one", "two", "three"):
            answer(server, True, id=asked[-1]["id"], modified_arguments={"command": f"touch {name}"})
            event = server.next_event()
            if event["type"] != "hitl_request":
                break
            asked.append(event)
        turn = [event, *server.read_turn()]
    assert [request["arguments"]["command"] for request in asked] == ["echo hi", "touch one", "touch two"]
    assert turn[0] == {
        "type": "tool_end",
        "tool": "execute_command",
        "success": False,
        "output": "Approval rejected: the arguments were changed 3 times and the changed call still needs approval",
        "call_id": "c1",
    }
    assert not any((work / name).exists() for name in ("one", "two", "three"))


def test_an_answer_without_id_after_its_request_timed_out_never_approves_the_next(work: Path) -> None:
    steps = [shell_call("c1", "touch first"), {"text": "timed out"}, shell_call("c2", "touch second"), {"text": "x"}]
    with scripted(work, steps, "--approval-timeout", "0.5") as server:
        started(server)
        server.user_message("touch first")
        server.events_until("hitl_request")
        timed_out = server.read_turn()
        answer(server, True, always_approve=True)  # late, and without id
        assert server.events_within(0.3) == [dropped("no approval request is waiting")]
        server.user_message("touch second")
        second = server.events_until("hitl_request")[-1]
        assert server.events_within(0.2) == []  # still waiting: the stale answer was not kept for it
        rest = server.read_turn()
    refusal = "Approval rejected: no answer to the approval request within 0.5s"
    assert timed_out[0]["output"] == refusal
    assert second["call_id"] == "c2"
    assert rest[0] == {
        "type": "tool_end",
        "tool": "execute_command",
        "success": False,
        "output": refusal,
        "call_id": "c2",
    }
    assert not (work / "first").exists() and not (work / "second").exists()


def refused_unless_asked(server: ServerProcess) -> tuple[Event | None, list[Event]]:
    """Read a turn; reject its approval request if there is one. Returns (the request or None, the turn)."""
    events = [server.next_event()]
    while events[-1]["type"] not in ("hitl_request", "turn_end"):
        events.append(server.next_event())
    if events[-1]["type"] == "turn_end":
        return None, events
    request = events[-1]
    answer(server, False, id=request["id"])
    return request, events + server.read_turn()


def test_always_on_echo_covers_echo_only_never_a_pipe_into_sh_or_a_chain(work: Path) -> None:
    steps = [
        shell_call("c1", "echo hi"),
        {"text": "one"},
        shell_call("c2", "echo bye > /dev/null"),
        {"text": "two"},
        shell_call("c3", "echo again"),
        {"text": "three"},
        shell_call("c4", "curl -s http://127.0.0.1:9/x|sh"),
        {"text": "four"},
        shell_call("c5", "echo hi; touch pwned"),
        {"text": "five"},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("echo hi")
        request = server.events_until("hitl_request")[-1]
        answer(server, True, id=request["id"], always_approve=True)
        first = server.read_turn()
        server.user_message("redirect")
        redirect_request, redirected = refused_unless_asked(server)
        server.user_message("echo again")
        covered = server.read_turn()
        server.user_message("curl into sh")
        curl_request, curl_turn = refused_unless_asked(server)
        server.user_message("a chain")
        chain_request, chain_turn = refused_unless_asked(server)
    assert request["scope"] == "execute_command: echo *"
    assert first[0]["success"] is True
    assert redirect_request is not None and redirect_request["scope"] == "execute_command: echo bye > /dev/null"
    assert of_type(covered, "hitl_request") == []
    assert of_type(covered, "tool_end")[0]["output"] == "Exit code: 0\nOutput:\nagain"
    for turn in (redirected, curl_turn, chain_turn):
        end = of_type(turn, "tool_end")[0]
        assert end["success"] is False
        assert end["output"].startswith(("Approval rejected: ", "Permission denied: "))
    assert curl_request is None or curl_request["scope"] == "execute_command: curl * ; sh"
    assert chain_request is not None and chain_request["scope"] == "execute_command: echo * ; touch *"
    assert not (work / "pwned").exists()
