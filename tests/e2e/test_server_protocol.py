"""The turn-stream protocol of the real ``ironhive run --server`` process (scripted or loopback OpenAI model)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import Event, ServerProcess, hitl_placement_errors, openai_environment

HEX32 = re.compile(r"[0-9a-f]{32}")
BARE_TURN_END = {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None}


@pytest.fixture
def model() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer() as server:
        yield server


def scripted(work: Path, steps: Sequence[object] | None = None, *flags: str) -> ServerProcess:
    """The server on the scripted model: ``steps`` from a file outside the working directory, or the echo model."""
    model_flags: tuple[str, ...] = ()
    if steps is not None:
        script = work.parent / "script.json"
        script.write_text(json.dumps({"steps": steps}))
        model_flags = ("-m", str(script))
    return ServerProcess("--provider", "scripted", *model_flags, *flags, cwd=work, home=work.parent / "home")


def on_openai(model: LoopbackOpenAIServer, work: Path) -> ServerProcess:
    return ServerProcess(cwd=work, home=work.parent / "home", env=openai_environment(model.base_url))


def started(server: ServerProcess) -> Event:
    event = server.next_event()
    assert event["type"] == "session_started"
    return event


def text_of(events: list[Event]) -> str:
    return "".join(event["content"] for event in events if event["type"] == "text_delta")


def types_of(events: list[Event]) -> list[str]:
    return [event["type"] for event in events]


def sent_as(request: dict[str, Any], text: str) -> str:
    """The one user message of a model request that carries ``text`` as sent (late in a session the context manager
    adds a goal reminder as a user message too, so "the last user message" is not always the client's)."""
    matching = [m["content"] for m in request["messages"] if m["role"] == "user" and m["content"].endswith(text)]
    assert len(matching) == 1, request["messages"]
    content = matching[0]
    assert isinstance(content, str)
    return content


# --- session start, order, turn ends ----------------------------------------------------------------------------------


@pytest.mark.parametrize("session_id", ["client-chosen-7", None], ids=["given", "generated"])
def test_session_started_is_the_first_line_before_any_request(work: Path, session_id: str | None) -> None:
    flags = ("--session-id", session_id) if session_id else ()
    with scripted(work, None, *flags) as server:
        first = server.next_event()  # nothing has been written to stdin yet
        assert set(first) == {"type", "session_id"} and first["type"] == "session_started"
        if session_id:
            assert first["session_id"] == session_id
        else:
            assert re.fullmatch(r"[0-9a-f]+-[0-9a-f]{8}", first["session_id"])  # the CLI's sortable session ids
        server.close_stdin()
        assert server.remaining_events() == []
        assert server.wait() == 0
    assert server.stdout_lines[0] == json.dumps(first, separators=(",", ":"))


def test_turns_run_in_arrival_order_each_with_one_turn_end(work: Path) -> None:
    with scripted(work) as server:
        started(server)
        server.send_raw(
            b"".join(
                json.dumps({"type": "user_message", "content": text}).encode() + b"\n"
                for text in ("first", "second", "third")
            )
        )
        turns = [server.read_turn() for _ in range(3)]
    assert [text_of(turn) for turn in turns] == ["You said: first", "You said: second", "You said: third"]
    for turn in turns:
        assert types_of(turn).count("turn_end") == 1 and turn[-1]["type"] == "turn_end"
        assert turn[-1]["total_tokens"] == turn[-1]["input_tokens"] + turn[-1]["output_tokens"]


def test_a_failing_turn_writes_error_then_turn_end_and_the_session_goes_on(work: Path) -> None:
    steps = [
        {"error": {"message": "The request was rejected by the model.", "status": 400, "retryable": False}},
        {"text": "Recovered."},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("first")  # the model fails
        server.user_message("   ")  # the loop refuses an empty prompt before any model call
        server.user_message("second")
        model_failed = server.read_turn()
        refused = server.read_turn()
        recovered = server.read_turn()
    # The error recovery layer may announce its verdict (``fallback`` notices) before the turn's error.
    assert {event["type"] for event in model_failed[:-2]} <= {"fallback"}
    error, turn_end = model_failed[-2:]
    assert error["type"] == "error" and "The request was rejected by the model." in error["message"]
    assert turn_end == BARE_TURN_END
    assert refused == [{"type": "error", "message": "The prompt must not be empty."}, BARE_TURN_END]
    assert text_of(recovered) == "Recovered." and "error" not in types_of(recovered)


def test_cancel_without_a_running_turn_is_ignored(work: Path) -> None:
    with scripted(work) as server:
        started(server)
        server.send({"type": "cancel"})
        assert server.events_within(0.3) == []
        server.user_message("hello")
        turn = server.read_turn()
    assert text_of(turn) == "You said: hello"


def test_cancel_stops_only_the_running_turn_and_is_not_stuck_behind_a_queued_message(work: Path) -> None:
    steps = [{"deltas": ["tick "] * 200, "delay_seconds": 0.05}, {"text": "second answer"}]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("slow one")
        server.user_message("queued one")  # waits behind the running turn
        assert server.next_event()["type"] == "text_delta"
        server.send({"type": "cancel"})
        cancelled = server.read_turn(timeout=5)
        queued = server.read_turn()
    assert types_of(cancelled) == ["text_delta"] * (len(cancelled) - 1) + ["turn_end"]
    assert len(cancelled) < 100  # stopped long before the 200 pieces
    assert cancelled[-1] == BARE_TURN_END
    assert text_of(queued) == "second answer" and queued[-1]["type"] == "turn_end"


def test_hitl_response_is_not_stuck_behind_a_queued_message(work: Path) -> None:
    steps = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "x"}, "id": "call_1"}]},
        {"text": "first done"},
        {"text": "second done"},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("write notes")
        request = server.events_until("hitl_request")[-1]
        server.user_message("and then this")  # queued while the approval waits
        server.send({"type": "hitl_response", "approved": True, "id": request["id"]})
        first = server.read_turn(timeout=5)
        second = server.read_turn()
    assert first[0]["type"] == "tool_end" and first[0]["success"] is True
    assert text_of(first) == "first done" and text_of(second) == "second done"
    assert (work / "notes.md").read_text() == "x"


SLOW_THEN_FAST = [{"deltas": ["a", "b", "c", "d", "e"], "delay_seconds": 0.05}, {"text": "second"}]


def test_shutdown_finishes_received_turns_then_exits_0(work: Path) -> None:
    with scripted(work, SLOW_THEN_FAST) as server:
        started(server)
        server.send_raw(
            b'{"type":"user_message","content":"one"}\n{"type":"user_message","content":"two"}\n'
            b'{"type":"shutdown"}\n{"type":"user_message","content":"after shutdown"}\n'
        )
        events = server.remaining_events()  # stdout closes although our end of stdin is still open
        code = server.wait()
    assert types_of(events).count("turn_end") == 2  # the message after shutdown is never read
    assert text_of(events) == "abcdesecond"
    assert "error" not in types_of(events)
    assert code == 0


def test_end_of_input_finishes_received_turns_then_exits_0(work: Path) -> None:
    with scripted(work, SLOW_THEN_FAST) as server:
        started(server)
        server.user_message("one")
        server.user_message("two")
        server.close_stdin()
        events = server.remaining_events()
        code = server.wait()
    assert types_of(events).count("turn_end") == 2 and text_of(events) == "abcdesecond"
    assert code == 0


def test_a_last_line_without_a_newline_is_still_read_at_end_of_input(work: Path) -> None:
    with scripted(work) as server:
        started(server)
        server.send_raw(b'{"type":"user_message","content":"no newline"}')
        server.close_stdin()
        events = server.remaining_events()
        assert server.wait() == 0
    assert text_of(events) == "You said: no newline" and types_of(events)[-1] == "turn_end"


# --- context and per-turn options (what the model received) ---------------------------------------------------------


def test_context_update_prefixes_later_messages_until_cleared(model: LoopbackOpenAIServer, work: Path) -> None:
    for _ in range(4):
        model.enqueue_text("ok")
    with on_openai(model, work) as server:
        started(server)
        server.send({"type": "context_update", "working_path": "/home/me/project", "selected_items": ["src/app.py"]})
        assert server.events_within(0.3) == []  # a context update never starts a turn
        server.user_message("first")
        server.read_turn()
        server.send({"type": "context_update", "working_path": ""})
        server.user_message("second")
        server.read_turn()
        server.send({"type": "context_update", "working_path": "/srv/other"})
        server.user_message("third")
        server.read_turn()
        server.send({"type": "context_update", "working_path": None})
        server.user_message("fourth")
        server.read_turn()
    sent = ("first", "second", "third", "fourth")
    assert [sent_as(request, text) for request, text in zip(model.requests, sent, strict=True)] == [
        "[WorkingPath: /home/me/project]\n\nfirst",
        "second",
        "[WorkingPath: /srv/other]\n\nthird",
        "fourth",
    ]


def tool_names(request: dict[str, Any]) -> list[str] | None:
    tools = request.get("tools")
    return None if tools is None else [tool["function"]["name"] for tool in tools]


def test_turn_options_reach_the_model_for_that_turn_only(model: LoopbackOpenAIServer, work: Path) -> None:
    for _ in range(4):
        model.enqueue_text("ok")
    options = {
        "tool_names": ["read_file", "list_directory", "read_file"],
        "tool_mode": "require:read_file",
        "reasoning_effort": "extra_high",
        "temperature": 0.2,
        "max_output_tokens": 512,
    }
    with on_openai(model, work) as server:
        started(server)
        per_turn: list[dict[str, Any]] = [
            {"options": options},
            {},
            {"options": {"tool_names": []}},
            {"options": {"tool_mode": "none"}},
        ]
        for fields in per_turn:
            server.user_message("go", **fields)
            assert server.read_turn()[-1]["type"] == "turn_end"
    with_options, configured, no_tools, mode_none = model.requests
    assert tool_names(with_options) == ["read_file", "list_directory"]  # first order kept, duplicate dropped
    assert with_options["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert with_options["reasoning_effort"] == "xhigh"
    assert with_options["temperature"] == 0.2 and with_options["max_completion_tokens"] == 512
    all_tools = tool_names(configured)
    assert all_tools is not None and {"read_file", "write_file", "execute_command"} <= set(all_tools)
    assert configured["temperature"] == 0.7 and configured["max_completion_tokens"] == 4096
    assert "tool_choice" not in configured and "reasoning_effort" not in configured
    assert tool_names(no_tools) is None and "tool_choice" not in no_tools  # [] offers no tools
    assert no_tools["temperature"] == 0.7
    assert tool_names(mode_none) == all_tools and mode_none["tool_choice"] == "none"


def test_invalid_turn_options_are_errors_without_a_model_call(model: LoopbackOpenAIServer, work: Path) -> None:
    model.enqueue_text("ok").enqueue_text("still ok")
    with on_openai(model, work) as server:
        started(server)
        server.user_message("learn the tools")
        server.read_turn()
        registered = tool_names(model.requests[0])
        assert registered is not None
        bad = [
            {"tool_names": ["read_file", "nope", "Read_File"]},
            {"tool_mode": "require:nope"},
            {"tool_mode": "sometimes"},
            {"reasoning_effort": "max"},
        ]
        answers = []
        for options in bad:
            server.user_message("go", options=options)
            answers.append(server.read_turn())
        assert len(model.requests) == 1  # no model call for any of them
        server.user_message("fine again")
        assert text_of(server.read_turn()) == "still ok"
    mode_message = "Unknown tool mode '{}'. Expected auto, none, require_any or require:<tool name>."
    assert answers == [
        [
            {
                "type": "error",
                "message": "Turn options name tool(s) that are not registered on this agent: nope, Read_File. "
                f"Registered tools: {', '.join(registered)}",
            },
            BARE_TURN_END,
        ],
        [{"type": "error", "message": mode_message.format("require:nope")}, BARE_TURN_END],
        [{"type": "error", "message": mode_message.format("sometimes")}, BARE_TURN_END],
        [
            {
                "type": "error",
                "message": "Unknown reasoning effort 'max'. Expected none, low, medium, high or extra_high.",
            },
            BARE_TURN_END,
        ],
    ]


# --- stdout hygiene -------------------------------------------------------------------------------------------------


def test_stdout_carries_only_compact_protocol_lines(work: Path) -> None:
    steps = [
        {"tool_calls": [{"name": "execute_command", "arguments": {"command": "echo printed-by-a-tool"}, "id": "c1"}]},
        {"text": "ran"},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.send({"type": "hitl_response", "approved": True})  # nothing waits: dropped, reported, logged on stderr
        assert server.next_event() == {
            "type": "error",
            "message": "Approval answer dropped: no approval request is waiting",
        }
        server.send_raw(b"not json\n")
        assert server.next_event()["message"].startswith("Unreadable request skipped: ")
        server.user_message("run it")
        server.events_until("hitl_request")
        server.send({"type": "hitl_response", "approved": True})
        turn = server.read_turn()
    assert "printed-by-a-tool" in turn[0]["output"]  # the tool's own stdout is captured, never inherited
    assert "approval answer dropped" in server.stderr_text
    for line in server.stdout_lines:
        value = json.loads(line)
        assert next(iter(value)) == "type"
        assert line == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert "printed-by-a-tool" not in server.stdout_lines


def test_a_huge_tool_result_is_capped_at_8_kb_on_the_wire(work: Path) -> None:
    line = "0123456789abcdef" * 6 + "\n"  # 97 bytes
    (work / "big.txt").write_text(line * 1056)  # about 100 KB
    steps = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}, "id": "big"}]},
        {"text": "read it"},
    ]
    with scripted(work, steps) as server:
        started(server)
        server.user_message("read the big file")
        turn = server.read_turn()
    end = next(event for event in turn if event["type"] == "tool_end")
    assert end["success"] is True
    assert len(end["output"].encode("utf-8")) <= 8192
    assert end["output"].startswith(line * 10)
    assert "output truncated" in end["output"] and str(len(line) * 1056) in end["output"]


# --- one full transcript, pinned --------------------------------------------------------------------------------------

TRANSCRIPT_SCRIPT = [
    {
        "text": "Let me look first.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}, "id": "call_1"}],
        "usage": {"input_tokens": 120, "output_tokens": 12},
    },
    {
        "thinking": "The readme is short; a note helps.",
        "text": "Now I will save a note.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.md", "content": "Remember the demo.\n"}, "id": "call_2"}
        ],
        "usage": {"input_tokens": 180, "output_tokens": 20},
    },
    {"deltas": ["Saved ", "notes.md."], "usage": {"input_tokens": 220, "output_tokens": 5}},
]


def test_transcript_of_a_turn_with_text_a_tool_round_and_an_approval(work: Path, snapshot: SnapshotAssertion) -> None:
    (work / "README.md").write_text("# Demo\nA demo project.\n")
    with scripted(work, TRANSCRIPT_SCRIPT, "--session-id", "transcript-session") as server:
        started(server)
        server.user_message("Look around and take a note.")
        events = server.events_until("hitl_request")
        hitl_id = events[-1]["id"]
        server.send({"type": "hitl_response", "approved": True, "id": hitl_id})
        events += server.read_turn()
        server.close_stdin()
        assert server.remaining_events() == []
        assert server.wait() == 0
    assert HEX32.fullmatch(hitl_id)
    assert hitl_placement_errors(events) == []
    assert (work / "notes.md").read_text() == "Remember the demo.\n"
    transcript = "\n".join(server.stdout_lines).replace(hitl_id, "<hitl-id>") + "\n"
    assert transcript.count("<hitl-id>") == 1
    assert transcript == snapshot
