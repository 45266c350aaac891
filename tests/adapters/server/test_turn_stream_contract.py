"""Turn-stream contract of both runners' core: malformed messages end their turn, every tool_start gets its tool_end."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.adapters.server.events import to_server_events, wire_input
from ironhive.adapters.server.stdio_runner import AgentServerRunner
from ironhive.adapters.server.turns import CANCELLED_CALL, UNFINISHED_CALL, TurnSession
from ironhive.domain.turn import AgentChunk, ContextCompactedChunk, ToolCallChunk
from ironhive.ports.chat import ToolCallPart
from ironhive.protocol.models import (
    TOOL_OUTPUT_LIMIT_BYTES,
    CancelRequest,
    ServerEvent,
    TextDeltaEvent,
    ToolStartEvent,
    TurnEndEvent,
    UserMessageRequest,
    parse_event,
)


class Recorder:
    """A processor that records the messages it was given and answers each with one text delta."""

    def __init__(self) -> None:
        self.messages: list[UserMessageRequest] = []

    async def __call__(self, request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        self.messages.append(request)
        yield TextDeltaEvent(content="answered")
        yield TurnEndEvent.from_counts(1, 1)


def serve(data: bytes, processor: Recorder) -> list[dict[str, Any]]:
    out = io.BytesIO()
    runner = AgentServerRunner(processor, stdin=io.BytesIO(data), stdout=out)
    asyncio.run(runner.run())
    return [parse_event(line).model_dump(mode="json") for line in out.getvalue().splitlines()]


def line(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"


# --- D1: a user_message with a wrong-typed field ----------------------------------------------------------------------

_NOT_A_STRING = st.one_of(
    st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.lists(st.text(), max_size=2)
)
_NOT_A_NUMBER: st.SearchStrategy[Any] = st.one_of(
    st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2), st.just({})
)
_NOT_AN_INTEGER = st.one_of(
    _NOT_A_NUMBER, st.floats(allow_nan=False, allow_infinity=False).filter(lambda value: not value.is_integer())
)
_NOT_A_NAME_LIST = st.one_of(
    st.text(max_size=5), st.integers(), st.booleans(), st.lists(st.integers(), min_size=1, max_size=3)
)
WRONG_OPTIONS = st.one_of(
    st.builds(lambda value: {"tool_names": value}, _NOT_A_NAME_LIST),
    st.builds(lambda value: {"tool_mode": value}, _NOT_A_STRING),
    st.builds(lambda value: {"reasoning_effort": value}, _NOT_A_STRING),
    st.builds(lambda value: {"temperature": value}, _NOT_A_NUMBER),
    st.builds(lambda value: {"max_output_tokens": value}, _NOT_AN_INTEGER),
)
WRONG_MESSAGES = st.one_of(
    st.builds(lambda options: {"type": "user_message", "content": "x", "options": options}, WRONG_OPTIONS),
    st.builds(lambda content: {"type": "user_message", "content": content}, _NOT_A_STRING),
    st.builds(lambda model: {"type": "user_message", "content": "x", "model": model}, _NOT_A_STRING),
    st.just({"type": "user_message"}),
    st.builds(lambda options: {"type": "user_message", "content": "x", "options": options}, _NOT_A_NAME_LIST),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(WRONG_MESSAGES)
def test_a_user_message_with_a_wrong_typed_field_gets_one_error_and_one_turn_end_without_a_model_call(
    message: dict[str, Any],
) -> None:
    processor = Recorder()
    events = serve(line(message) + line({"type": "user_message", "content": "next"}), processor)
    assert [event["type"] for event in events] == ["error", "turn_end", "text_delta", "turn_end"]
    assert events[0]["message"].startswith("Invalid user_message: ")
    assert "user_message.user_message" not in events[0]["message"]
    assert events[1] == {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None}
    assert [request.content for request in processor.messages] == ["next"]  # no model call for the bad one


def test_a_malformed_user_message_keeps_its_place_behind_the_running_turn() -> None:
    processor = Recorder()
    bad = {"type": "user_message", "content": "x", "options": {"temperature": "hot"}}
    data = b"".join(line(m) for m in ({"type": "user_message", "content": "first"}, bad, {"type": "cancel"}))
    events = serve(data, processor)
    assert [event["type"] for event in events] == ["text_delta", "turn_end", "error", "turn_end"]
    assert events[2]["message"] == "Invalid user_message: options.temperature: Input should be a valid number"


def test_other_unreadable_lines_still_get_one_error_and_no_turn_end() -> None:
    events = serve(b'not json\n{"type":"hitl_response","approved":"yes"}\n{"no":"type"}\n', Recorder())
    assert [event["type"] for event in events] == ["error", "error", "error"]
    assert all(event["message"].startswith("Unreadable request skipped: ") for event in events)


@given(st.integers(min_value=1, max_value=2**53))
def test_integral_floats_are_accepted_for_integer_fields(tokens: int) -> None:
    processor = Recorder()
    message = {"type": "user_message", "content": "x", "options": {"max_output_tokens": float(tokens)}}
    events = serve(json.dumps(message).encode(), processor)
    assert [event["type"] for event in events] == ["text_delta", "turn_end"]
    options = processor.messages[0].options
    assert options is not None and options.max_output_tokens == tokens
    assert type(options.max_output_tokens) is int


# --- tool_start.input and the tool_end of every call ------------------------------------------------------------------


def test_tool_start_input_carries_the_call_arguments_with_long_strings_capped() -> None:
    call = ToolCallPart(call_id="c1", name="write_file", arguments={"path": "a.txt", "content": "x" * 20_000, "n": 3})
    value = wire_input(call)
    assert isinstance(value, dict)
    assert value["path"] == "a.txt" and value["n"] == 3
    content = value["content"]
    assert isinstance(content, str) and len(content.encode()) <= TOOL_OUTPUT_LIMIT_BYTES
    assert "output truncated" in content
    unparsed = ToolCallPart(call_id="c2", name="x", arguments=None, arguments_text='{"path": ')
    assert wire_input(unparsed) == '{"path": '
    assert wire_input(ToolCallPart(call_id="c3", name="x", arguments=None, arguments_text="")) is None
    assert wire_input(ToolCallPart(call_id="c4", name="x", arguments={})) == {}


async def test_tool_start_on_the_wire_has_the_arguments() -> None:
    async def chunks() -> AsyncIterator[AgentChunk]:
        yield ToolCallChunk(call=ToolCallPart(call_id="c1", name="read_file", arguments={"path": "README.md"}))

    events = [event async for event in to_server_events(chunks())]
    assert events[0] == ToolStartEvent(tool="read_file", input={"path": "README.md"}, call_id="c1")


async def run_session(requests: list[object], process: Any) -> list[ServerEvent]:
    sent: list[ServerEvent] = []

    async def send(event: ServerEvent) -> None:
        sent.append(event)

    async with TurnSession(process, send) as session:
        for request in requests:
            if isinstance(request, float):
                await asyncio.sleep(request)
            else:
                assert isinstance(request, UserMessageRequest | CancelRequest)
                await session.handle(request)
    return sent


async def test_a_call_cancelled_while_running_gets_its_tool_end_before_turn_end() -> None:
    async def process(request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        yield ToolStartEvent(tool="execute_command", input={"command": "sleep 60"}, call_id="c1")
        await asyncio.sleep(3600)
        yield TurnEndEvent.from_counts()  # pragma: no cover

    sent = await run_session([UserMessageRequest(content="go"), 0.05, CancelRequest()], process)
    dumped = [event.model_dump(mode="json") for event in sent]
    assert dumped == [
        {"type": "tool_start", "tool": "execute_command", "input": {"command": "sleep 60"}, "call_id": "c1"},
        {"type": "tool_end", "tool": "execute_command", "success": False, "output": CANCELLED_CALL, "call_id": "c1"},
        {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None},
    ]


async def test_a_call_open_when_the_turn_fails_gets_its_tool_end_before_the_error() -> None:
    async def process(request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        yield ToolStartEvent(tool="read_file", call_id="c1")
        raise RuntimeError("the model went away")

    sent = await run_session([UserMessageRequest(content="go")], process)
    assert [(event.type, getattr(event, "output", None) or getattr(event, "message", None)) for event in sent] == [
        ("tool_start", None),
        ("tool_end", UNFINISHED_CALL),
        ("error", "the model went away"),
        ("turn_end", None),
    ]


# --- D8: context_compacted says what was cut ------------------------------------------------------------------------


async def test_context_compacted_reports_the_parts_and_characters_cut() -> None:
    async def chunks() -> AsyncIterator[AgentChunk]:
        yield ContextCompactedChunk(
            tokens_before=9000,
            tokens_after=3000,
            messages_summarized=0,
            messages_dropped=0,
            summary_used=False,
            parts_cut=1,
            chars_cut=5078,
        )

    events = [event.model_dump(mode="json") async for event in to_server_events(chunks())]
    assert events[0] == {
        "type": "context_compacted",
        "tokens_before": 9000,
        "tokens_after": 3000,
        "messages_summarized": 0,
        "messages_dropped": 0,
        "summary_used": False,
        "parts_cut": 1,
        "chars_cut": 5078,
    }
