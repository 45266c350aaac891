"""The pure Responses API mapping: requests from conversations, stream events and whole responses to updates."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from ironhive.adapters.openai.responses_mapping import (
    ResponsesStreamAccumulator,
    build_responses_request,
    is_reasoning_model,
    to_chat_response,
    to_input_items,
    to_tool_choice,
)
from ironhive.domain.errors import ConfigurationError, ProviderError
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from tests.support.openai_responses import ResponsesShape, shaped_events

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
REASONING_REQUEST = {"model": "gpt-5", "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}}

pieces = st.lists(st.text(min_size=1, max_size=8), max_size=4)
names = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
arguments = st.dictionaries(names, st.integers() | st.text(max_size=6), max_size=3).map(json.dumps)
calls = st.lists(st.tuples(st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True), names, arguments), max_size=3)


def feed(shape: ResponsesShape, number: int = 1) -> tuple[list[ChatUpdate], Response]:
    events, final = shaped_events(REASONING_REQUEST, number, shape)
    accumulator = ResponsesStreamAccumulator(id_factory=lambda: "generated", provider="openai")
    updates = [update for event in events for update in accumulator.feed(EVENTS.validate_python(event))]
    return updates, Response.model_validate(final)


@given(reasoning=pieces, chunks=pieces, made=calls, piece=st.integers(1, 9))
def test_streamed_and_whole_answers_carry_the_same_content(
    reasoning: list[str], chunks: list[str], made: list[tuple[str, str, str]], piece: int
) -> None:
    shape = ResponsesShape(reasoning=reasoning, chunks=chunks, calls=made, argument_piece=piece, usage=(9, 4))
    updates, final = feed(shape)
    whole = to_chat_response(final, lambda: "generated", provider="openai")
    assert "".join(u.text_delta for u in updates) == whole.message.text == "".join(chunks)
    blocks = [u.thinking_block for u in updates if u.thinking_block is not None]
    assert blocks == [p for p in whole.message.parts if isinstance(p, ThinkingPart)]
    assert "".join(u.thinking_delta for u in updates) == "".join(reasoning) == blocks[0].text
    streamed_calls = [c for u in updates for c in u.tool_calls]
    assert streamed_calls == list(whole.message.tool_calls)
    assert [(c.call_id, c.name, c.arguments_text) for c in streamed_calls] == made
    assert updates[-1].finish_reason == whole.finish_reason == ("tool_calls" if made else "stop")
    assert updates[-1].usage == whole.usage and whole.usage is not None and whole.usage.total_tokens == 13


@given(reasoning=pieces, made=calls)
def test_a_reasoning_block_goes_back_as_the_item_it_came_from(
    reasoning: list[str], made: list[tuple[str, str, str]]
) -> None:
    _, final = shaped_events(REASONING_REQUEST, 3, ResponsesShape(reasoning=reasoning, calls=made))
    message = to_chat_response(Response.model_validate(final), lambda: "x", provider="openai").message
    summary = "".join(reasoning)
    assert to_input_items([message], provider="openai") == [
        {
            "type": "reasoning",
            "id": "rs_loopback000003",
            "summary": [{"type": "summary_text", "text": summary}] if summary else [],
            "encrypted_content": "gAAAAB-loopback-encrypted-000003",
        },
        *({"type": "function_call", "call_id": c, "name": n, "arguments": a} for c, n, a in made),
    ]


def test_state_of_another_provider_or_unreadable_state_is_dropped() -> None:
    parts = (
        ThinkingPart(text="a", opaque=OpaqueState(provider="anthropic", data='{"id":"rs","encrypted_content":"x"}')),
        ThinkingPart(text="b", opaque=OpaqueState(provider="openai", data="not json")),
        ThinkingPart(text="c", opaque=OpaqueState(provider="openai", data='{"id":"rs"}')),
        ThinkingPart(text="plain"),
        TextPart(text="answer"),
    )
    items = to_input_items([ChatMessage(role=Role.ASSISTANT, parts=parts)], provider="openai")
    assert items == [{"type": "message", "role": "assistant", "content": "answer"}]


def test_conversation_order_system_user_results() -> None:
    call = ToolCallPart(call_id="c1", name="t", arguments={}, arguments_text="  ")
    result = ToolResultPart(call_id="c1", name="t", result="r", success=True)
    messages = [
        ChatMessage.of_text(Role.SYSTEM, "rules"),
        ChatMessage.of_text(Role.USER, "go"),
        ChatMessage(role=Role.ASSISTANT, parts=(call,)),
        ChatMessage(role=Role.USER, parts=(result, TextPart(text="and then?"))),
    ]
    assert to_input_items(messages, provider="openai") == [
        {"type": "message", "role": "system", "content": "rules"},
        {"type": "message", "role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"type": "message", "role": "user", "content": "and then?"},
    ]


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("gpt-5", True),
        ("o3-mini", True),
        ("o4-mini", True),
        ("codex-mini-latest", True),
        ("openai/gpt-5.1", True),
        ("gpt-4.1", False),
        ("gpt-4o", False),
    ],
)
def test_reasoning_models_are_told_by_name(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning
    request = build_responses_request([], ChatOptions(temperature=0.3), default_model=model, provider="openai")
    assert ("temperature" in request) is not reasoning and ("include" in request) is reasoning


def test_an_unknown_tool_mode_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown tool mode"):
        to_tool_choice("sometimes")


@pytest.mark.parametrize(
    ("incomplete", "reason"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
def test_an_incomplete_response_says_why(incomplete: str, reason: str) -> None:
    updates, final = feed(ResponsesShape(chunks=["cut"], incomplete=incomplete))
    assert updates[-1].finish_reason == reason
    assert to_chat_response(final, lambda: "x", provider="openai").finish_reason == reason


@pytest.mark.parametrize(("code", "retryable"), [("server_error", True), ("invalid_prompt", False)])
def test_a_failed_response_raises_a_provider_error(code: str, retryable: bool) -> None:
    with pytest.raises(ProviderError) as caught:
        feed(ResponsesShape(chunks=["x"], failure=(code, "went wrong")))
    assert caught.value.retryable is retryable and "went wrong" in str(caught.value)
    event = EVENTS.validate_python(
        {"type": "error", "code": code, "message": "boom", "param": None, "sequence_number": 0}
    )
    with pytest.raises(ProviderError) as caught:
        ResponsesStreamAccumulator(id_factory=lambda: "x", provider="openai").feed(event)
    assert caught.value.retryable is retryable
