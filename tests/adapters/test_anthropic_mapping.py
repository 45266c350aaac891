"""Pure tests (no I/O) of the Anthropic adapter's request and response mapping and error translation."""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import (
    Message,
    MessageParam,
    OutputConfigParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
)
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.anthropic.errors import translate_error
from ironhive.adapters.anthropic.mapping import (
    ADAPTIVE_EFFORTS,
    THINKING_BUDGETS,
    build_request,
    model_traits,
    to_anthropic_messages,
    to_anthropic_tool,
    to_tool_choice,
)
from ironhive.adapters.anthropic.reasoning import SignedThinking, block_of, redacted_part, signed_part
from ironhive.adapters.anthropic.responses import (
    StreamAccumulator,
    to_chat_response,
    to_finish_reason,
)
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    OpaqueState,
    ReasoningEffort,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

SPEC = ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object", "properties": {}})
HELLO = [ChatMessage.of_text(Role.USER, "hi")]
SIGNED: SignedThinking = {"type": "thinking", "thinking": "plan", "signature": "sig-1"}
_EVENT_TYPES: dict[str, Any] = {
    "message_start": RawMessageStartEvent,
    "content_block_start": RawContentBlockStartEvent,
    "content_block_delta": RawContentBlockDeltaEvent,
    "content_block_stop": RawContentBlockStopEvent,
    "message_delta": RawMessageDeltaEvent,
    "message_stop": RawMessageStopEvent,
}


def ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"gen_{next(counter)}"


def call(call_id: str, arguments: dict[str, Any] | None = None, text: str = "{}") -> ToolCallPart:
    return ToolCallPart(call_id=call_id, name="read_file", arguments=arguments, arguments_text=text)


def result(call_id: str, success: bool | None = True) -> ToolResultPart:
    return ToolResultPart(call_id=call_id, name="read_file", result=f"out {call_id}", success=success)


def event(data: dict[str, Any]) -> RawMessageStreamEvent:
    parsed: RawMessageStreamEvent = _EVENT_TYPES[data["type"]].model_validate(data)
    return parsed


def start(input_tokens: int = 5, creation: int | None = 0, read: int | None = 0) -> RawMessageStreamEvent:
    usage: dict[str, int | None] = {"input_tokens": input_tokens, "output_tokens": 1}
    usage |= {"cache_creation_input_tokens": creation, "cache_read_input_tokens": read}
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [], "usage": usage}
    return event({"type": "message_start", "message": message})


def block_start(index: int, block: dict[str, Any]) -> RawMessageStreamEvent:
    return event({"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, **fields: Any) -> RawMessageStreamEvent:
    return event({"type": "content_block_delta", "index": index, "delta": fields})


def stop(index: int) -> RawMessageStreamEvent:
    return event({"type": "content_block_stop", "index": index})


def message_delta(reason: str | None, **usage: Any) -> RawMessageStreamEvent:
    return event({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": usage})


def blocks_of(message: MessageParam) -> list[Any]:
    content = message["content"]
    assert isinstance(content, list)
    return content


def feed_all(accumulator: StreamAccumulator, events: list[RawMessageStreamEvent]) -> list[ChatUpdate]:
    return [update for item in events for update in accumulator.feed(item)] + accumulator.finish()


# -- messages -------------------------------------------------------------------------------------------------------


def test_system_messages_become_system_blocks_and_thinking_is_not_sent() -> None:
    messages = [
        ChatMessage.of_text(Role.SYSTEM, "Be brief."),
        ChatMessage.of_text(Role.USER, "Hi"),
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="hmm"), TextPart(text="Hello"))),
        ChatMessage.of_text(Role.SYSTEM, "[Previous conversation summary]: none"),
        ChatMessage.of_text(Role.SYSTEM, "  "),
    ]

    system, mapped = to_anthropic_messages(messages)

    assert system == [
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": "[Previous conversation summary]: none"},
    ]
    assert mapped == [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
    ]


def test_turns_of_one_role_merge_and_tool_results_open_the_user_turn() -> None:
    messages = [
        ChatMessage.of_text(Role.USER, "Read a"),
        ChatMessage(role=Role.ASSISTANT, parts=(call("a", {"path": "a"}),)),
        ChatMessage.of_text(Role.USER, "also note this"),
        ChatMessage(role=Role.TOOL, parts=(result("a"),)),
        ChatMessage(role=Role.USER, parts=(result("b", success=None), TextPart(text="and now?"))),
    ]

    _, mapped = to_anthropic_messages(messages)

    assert [message["role"] for message in mapped] == ["user", "assistant", "user"]
    assert mapped[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "out a"},
        {"type": "tool_result", "tool_use_id": "b", "content": "out b"},
        {"type": "text", "text": "also note this"},
        {"type": "text", "text": "and now?"},
    ]


def test_calls_send_parsed_arguments_failures_are_errors_and_empty_turns_vanish() -> None:
    messages = [
        ChatMessage.of_text(Role.USER, "go"),
        ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text=" "), call("c1", {"n": 1}), call("c2", None, "{oops"))),
        ChatMessage(role=Role.TOOL, parts=(result("c1", success=False), result("c2"))),
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="only thinking"),)),
        ChatMessage.of_text(Role.USER, "next"),
    ]

    _, mapped = to_anthropic_messages(messages)

    assert mapped[1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"n": 1}},
            {"type": "tool_use", "id": "c2", "name": "read_file", "input": {}},
        ],
    }
    assert mapped[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "out c1", "is_error": True},
        {"type": "tool_result", "tool_use_id": "c2", "content": "out c2"},
        {"type": "text", "text": "next"},
    ]
    assert len(mapped) == 3


def test_signed_thinking_parts_open_their_assistant_turn_and_unsigned_or_foreign_ones_stay_out() -> None:
    foreign = ThinkingPart(text="gemini plan", opaque=OpaqueState(provider="google", data='{"signature": "g"}'))
    messages = [
        ChatMessage.of_text(Role.USER, "go"),
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="plain"), TextPart(text="thinking about it"))),
        ChatMessage(
            role=Role.ASSISTANT,
            parts=(signed_part("plan", "sig-1"), redacted_part("ENC"), foreign, TextPart(text="Reading."), call("x")),
        ),
    ]

    _, mapped = to_anthropic_messages(messages, thinking=True)
    _, without = to_anthropic_messages(messages)

    assert blocks_of(mapped[1])[1:3] == [SIGNED, {"type": "redacted_thinking", "data": "ENC"}]
    assert [block["type"] for block in blocks_of(mapped[1])] == [
        "text", "thinking", "redacted_thinking", "text", "tool_use"
    ]  # fmt: skip
    assert [block["type"] for block in blocks_of(without[1])] == ["text", "text", "tool_use"]


@given(
    thinking=st.text(),
    signature=st.text(min_size=1),
    data=st.text(min_size=1),
)
def test_the_stored_state_gives_back_exactly_the_blocks_the_api_sent(thinking: str, signature: str, data: str) -> None:
    assert block_of(signed_part(thinking, signature)) == {
        "type": "thinking", "thinking": thinking, "signature": signature
    }  # fmt: skip
    assert block_of(redacted_part(data)) == {"type": "redacted_thinking", "data": data}


@pytest.mark.parametrize(
    "opaque",
    [
        None,
        OpaqueState(provider="openai", data='{"signature": "s"}'),
        OpaqueState(provider="anthropic", data="not json"),
        OpaqueState(provider="anthropic", data='["signature"]'),
        OpaqueState(provider="anthropic", data='{"signature": ""}'),
        OpaqueState(provider="anthropic", data='{"other": "s"}'),
    ],
    ids=["none", "foreign", "not-json", "not-object", "empty", "unknown-key"],
)
def test_thinking_without_readable_anthropic_state_is_not_sent(opaque: OpaqueState | None) -> None:
    assert block_of(ThinkingPart(text="t", opaque=opaque)) is None


# -- prompt caching -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "marked"), [(4095, False), (4096, True)])
def test_a_system_message_of_1024_estimated_tokens_is_a_cache_breakpoint(length: int, marked: bool) -> None:
    system, _ = to_anthropic_messages([ChatMessage.of_text(Role.SYSTEM, "x" * length), *HELLO])

    assert ("cache_control" in system[0]) is marked
    if marked:
        assert system[0]["cache_control"] == {"type": "ephemeral"}


def test_no_more_than_four_breakpoints_and_the_earliest_win() -> None:
    messages = [ChatMessage.of_text(Role.SYSTEM, f"{index}" * 5000) for index in range(6)]

    system, _ = to_anthropic_messages([*messages, *HELLO])

    assert ["cache_control" in block for block in system] == [True, True, True, True, False, False]


# -- tools ----------------------------------------------------------------------------------------------------------


def test_tool_specs_become_tool_definitions() -> None:
    bare = ToolSpec(name="now", description="", parameters={})

    assert to_anthropic_tool(SPEC) == {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {}},
    }
    assert to_anthropic_tool(bare) == {"name": "now", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("mode", "choice"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("require_any", {"type": "any"}),
        ("require: read_file", {"type": "tool", "name": "read_file"}),
    ],
)
def test_tool_modes(mode: str, choice: object) -> None:
    assert to_tool_choice(mode) == choice


@pytest.mark.parametrize("mode", ["always", "require:", "require: ", "REQUIRE_ANY", ""])
def test_unknown_tool_modes_are_errors(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown tool mode"):
        build_request(HELLO, ChatOptions(tool_mode=mode), default_model="m", default_max_tokens=10)


# -- request options ------------------------------------------------------------------------------------------------


def request(options: ChatOptions, model: str = "claude-sonnet-4-5", messages: list[ChatMessage] = HELLO) -> Any:
    return build_request(messages, options, default_model=model, default_max_tokens=4096)


def test_unset_options_leave_only_what_the_api_requires() -> None:
    assert request(ChatOptions(tools=(), tool_mode="none")) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


def test_options_map_onto_request_fields() -> None:
    options = ChatOptions(model="claude-x", temperature=0.0, max_output_tokens=10, tools=(SPEC,), tool_mode="auto")

    mapped = request(options)

    assert (mapped["model"], mapped["max_tokens"], mapped["extra_body"]) == ("claude-x", 10, {"temperature": 0.0})
    assert mapped["tool_choice"] == {"type": "auto"}
    assert [tool["name"] for tool in mapped["tools"]] == ["read_file"]


@pytest.mark.parametrize(
    ("effort", "budget"), [("low", 1024), ("medium", 4096), ("high", 16384), ("extra_high", 32000)]
)
def test_efforts_become_thinking_budgets_on_top_of_the_default_limit(effort: ReasoningEffort, budget: int) -> None:
    mapped = request(ChatOptions(reasoning_effort=effort, temperature=0.7))

    assert mapped["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert mapped["max_tokens"] == 4096 + budget
    assert "extra_body" not in mapped  # the API takes no temperature but 1 while thinking


def test_a_set_limit_is_kept_and_the_budget_shrinks_below_it() -> None:
    shrunk = request(ChatOptions(reasoning_effort="high", max_output_tokens=2000))
    too_small = request(ChatOptions(reasoning_effort="low", max_output_tokens=1024, temperature=0.1))

    assert (shrunk["max_tokens"], shrunk["thinking"]) == (2000, {"type": "enabled", "budget_tokens": 1999})
    assert "thinking" not in too_small
    assert (too_small["max_tokens"], too_small["extra_body"]) == (1024, {"temperature": 0.1})


def test_effort_none_disables_thinking_and_a_forced_tool_leaves_it_off() -> None:
    disabled = request(ChatOptions(reasoning_effort="none"))
    forced = request(ChatOptions(reasoning_effort="high", tools=(SPEC,), tool_mode="require:read_file"))

    assert disabled["thinking"] == {"type": "disabled"}
    assert "thinking" not in forced
    assert forced["max_tokens"] == 4096


def test_adaptive_models_think_adaptively_with_an_effort() -> None:
    adaptive = request(ChatOptions(reasoning_effort="medium", temperature=0.2), model="claude-sonnet-4-6")
    forced = request(
        ChatOptions(reasoning_effort="low", tools=(SPEC,), tool_mode="require_any"), model="claude-opus-4-6"
    )
    off = request(ChatOptions(reasoning_effort="none", temperature=0.2), model="claude-opus-4-6")

    assert adaptive["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert adaptive["output_config"] == {"effort": "medium"}
    assert (adaptive["max_tokens"], "extra_body" in adaptive) == (4096 + 4096, False)
    assert "thinking" not in forced and forced["output_config"] == {"effort": "low"}
    assert "thinking" not in off and "output_config" not in off
    assert off["extra_body"] == {"temperature": 0.2}


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-5", "claude-mythos-preview", "claude-fable-5"])
def test_models_that_dropped_sampling_get_no_temperature(model: str) -> None:
    assert "extra_body" not in request(ChatOptions(temperature=0.2), model=model)


def test_every_adaptive_effort_is_one_the_sdk_accepts() -> None:
    (literal, _none) = typing.get_args(typing.get_type_hints(OutputConfigParam)["effort"])

    assert set(ADAPTIVE_EFFORTS) == set(THINKING_BUDGETS) == {"low", "medium", "high", "extra_high"}
    assert set(ADAPTIVE_EFFORTS.values()) <= set(typing.get_args(literal))


def test_an_open_tool_round_keeps_thinking_only_with_its_signed_thinking() -> None:
    history = [
        *HELLO,
        ChatMessage(role=Role.ASSISTANT, parts=(signed_part("plan", "sig-1"), call("k", {}))),
        ChatMessage(role=Role.TOOL, parts=(result("k"),)),
    ]
    unsigned = [
        history[0],
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="plan"), call("k", {}))),
        history[2],
    ]
    options = ChatOptions(reasoning_effort="low")

    replayed = build_request(history, options, default_model="claude-sonnet-4-5", default_max_tokens=4096)
    forgotten = build_request(unsigned, options, default_model="claude-sonnet-4-5", default_max_tokens=4096)

    assert replayed["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert blocks_of(replayed["messages"][1])[0] == SIGNED
    assert "thinking" not in forgotten
    assert forgotten["max_tokens"] == 4096


def test_a_closed_tool_round_does_not_need_its_thinking() -> None:
    history = [
        *HELLO,
        ChatMessage(role=Role.ASSISTANT, parts=(call("k", {}),)),
        ChatMessage(role=Role.TOOL, parts=(result("k"),)),
        ChatMessage.of_text(Role.ASSISTANT, "It said out k."),
        ChatMessage.of_text(Role.USER, "thanks, now think hard"),
    ]

    mapped = request(ChatOptions(reasoning_effort="high"), messages=history)

    assert mapped["thinking"] == {"type": "enabled", "budget_tokens": 16384}


@pytest.mark.parametrize(
    ("model", "adaptive", "sampling"),
    [
        ("claude-3-7-sonnet-20250219", False, True),
        ("claude-sonnet-4-20250514", False, True),
        ("claude-opus-4-1-20250805", False, True),
        ("claude-haiku-4-5", False, True),
        ("claude-opus-4-6", True, True),
        ("anthropic.claude-sonnet-4-6-v1", True, True),
        ("claude-opus-4-7", True, False),
        ("claude-opus-5", True, False),
        ("claude-mythos-preview", True, False),
        ("my-finetune", False, True),
    ],
)
def test_model_traits(model: str, adaptive: bool, sampling: bool) -> None:
    traits = model_traits(model)

    assert (traits.adaptive_thinking, traits.sampling) == (adaptive, sampling)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("something_new", "stop"),
    ],
)
def test_stop_reasons(raw: str | None, expected: str | None) -> None:
    assert to_finish_reason(raw) == expected


# -- streaming accumulator ------------------------------------------------------------------------------------------


def test_accumulator_keeps_thinking_apart_and_sends_usage_once_with_the_finish() -> None:
    accumulator = StreamAccumulator(ids())

    updates = feed_all(
        accumulator,
        [
            start(input_tokens=10, creation=200, read=300),
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, type="thinking_delta", thinking="Let me "),
            delta(0, type="thinking_delta", thinking="see."),
            delta(0, type="signature_delta", signature="sig-9"),
            stop(0),
            block_start(1, {"type": "text", "text": ""}),
            delta(1, type="text_delta", text="Hi"),
            delta(
                1,
                type="citations_delta",
                citation={
                    "type": "char_location",
                    "cited_text": "x",
                    "document_index": 0,
                    "document_title": None,
                    "start_char_index": 0,
                    "end_char_index": 1,
                },
            ),
            stop(1),
            message_delta("end_turn", output_tokens=42),
            event({"type": "message_stop"}),
        ],
    )

    assert updates == [
        ChatUpdate(thinking_delta="Let me "),
        ChatUpdate(thinking_delta="see."),
        ChatUpdate(thinking_block=signed_part("Let me see.", "sig-9")),
        ChatUpdate(text_delta="Hi"),
        ChatUpdate(finish_reason="stop"),
        ChatUpdate(usage=Usage(input_tokens=510, output_tokens=42, cached_input_tokens=300)),
    ]


def test_usage_restated_by_the_final_delta_wins_and_is_sent_only_once() -> None:
    updates = feed_all(
        StreamAccumulator(ids()),
        [
            start(input_tokens=10, creation=None, read=None),
            message_delta("end_turn", output_tokens=3, input_tokens=11, cache_read_input_tokens=100),
            message_delta(None, output_tokens=4),
        ],
    )

    assert [update.usage for update in updates if update.usage] == [
        Usage(input_tokens=111, output_tokens=3, cached_input_tokens=100)
    ]


def test_interleaved_tool_blocks_become_complete_calls_in_stop_order() -> None:
    accumulator = StreamAccumulator(ids())

    updates = feed_all(
        accumulator,
        [
            start(),
            block_start(0, {"type": "tool_use", "id": "toolu_a", "name": "one", "input": {}}),
            block_start(1, {"type": "tool_use", "id": "", "name": "two", "input": {}}),
            delta(0, type="input_json_delta", partial_json='{"x"'),
            delta(1, type="input_json_delta", partial_json="[1]"),
            delta(0, type="input_json_delta", partial_json=": 1}"),
            stop(1),
            stop(0),
            message_delta("tool_use", output_tokens=9),
        ],
    )

    second, first = (update.tool_calls[0] for update in updates if update.tool_calls)
    assert first == ToolCallPart(call_id="toolu_a", name="one", arguments={"x": 1}, arguments_text='{"x": 1}')
    assert (second.call_id, second.name, second.arguments) == ("gen_1", "two", None)
    assert second.parse_error is not None and "not list" in second.parse_error
    assert [update.finish_reason for update in updates if update.finish_reason] == ["tool_calls"]


def test_input_sent_whole_in_the_start_block_and_unclosed_blocks_are_flushed() -> None:
    accumulator = StreamAccumulator(ids())
    accumulator.feed(start())
    accumulator.feed(block_start(0, {"type": "tool_use", "id": "toolu_w", "name": "t", "input": {"a": [1]}}))
    accumulator.feed(block_start(1, {"type": "tool_use", "id": "toolu_p", "name": "t", "input": {}}))
    accumulator.feed(delta(1, type="input_json_delta", partial_json='{"cut'))

    flushed = accumulator.finish()

    assert [update.tool_calls[0].arguments for update in flushed] == [{"a": [1]}, None]
    assert accumulator.finish() == []


def test_redacted_thinking_closes_as_a_block_with_no_text() -> None:
    accumulator = StreamAccumulator(ids())

    updates = feed_all(
        accumulator,
        [start(), block_start(0, {"type": "redacted_thinking", "data": "ENCRYPTED"}), stop(0)],
    )

    assert updates == [ChatUpdate(thinking_block=redacted_part("ENCRYPTED"))]


def test_an_unsigned_thinking_block_streams_its_text_but_closes_no_block() -> None:
    updates = feed_all(
        StreamAccumulator(ids()),
        [start(), block_start(0, {"type": "thinking", "thinking": "hm", "signature": ""}), stop(0)],
    )

    assert updates == [ChatUpdate(thinking_delta="hm")]


# -- whole messages --------------------------------------------------------------------------------------------------


def test_a_whole_message_maps_onto_parts_usage_and_signed_thinking() -> None:
    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "why", "signature": "sig"},
                {"type": "redacted_thinking", "data": "ENC"},
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "", "name": "grep", "input": {"q": "x"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 2, "output_tokens": 3, "cache_read_input_tokens": 40},
        }
    )

    response = to_chat_response(message, ids())

    assert response.message.parts == (
        signed_part("why", "sig"),
        redacted_part("ENC"),
        TextPart(text="ok"),
        ToolCallPart(call_id="gen_1", name="grep", arguments={"q": "x"}, arguments_text='{"q": "x"}'),
    )
    assert response.usage == Usage(input_tokens=42, output_tokens=3, cached_input_tokens=40)
    assert response.finish_reason == "tool_calls"


# -- errors ---------------------------------------------------------------------------------------------------------

REQUEST = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")


def body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def status_error(status: int, payload: object, headers: dict[str, str] | None = None) -> anthropic.APIStatusError:
    response = httpx2.Response(status, headers=headers or {}, request=REQUEST)
    return anthropic.APIStatusError(f"Error code: {status}", response=response, body=payload)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (403, False), (404, False), (408, True), (429, True), (500, True), (529, True)],
)
def test_status_errors(status: int, retryable: bool) -> None:
    error = translate_error(status_error(status, body("some_error", "nope")), provider="acme")

    assert type(error) is ProviderError
    assert (error.status, error.retryable, error.provider) == (status, retryable, "acme")
    assert str(error) == f"acme returned HTTP {status} (some_error): nope"


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ("input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length", 200_000),
        ("Prompt is too long", None),
    ],
)
def test_prompt_too_long_is_an_overflow(message: str, window: int | None) -> None:
    error = translate_error(status_error(400, body("invalid_request_error", message)))

    assert isinstance(error, ContextOverflowError)
    assert (error.window, error.status, error.provider) == (window, 400, "anthropic")


def test_other_bad_requests_and_large_bodies_are_not_overflows() -> None:
    bad = translate_error(status_error(400, body("invalid_request_error", "messages: field required")))
    large = translate_error(status_error(413, body("request_too_large", "Request exceeds the maximum size")))

    assert not isinstance(bad, ContextOverflowError) and not isinstance(large, ContextOverflowError)
    assert (large.status, large.retryable) == (413, False)


@pytest.mark.parametrize(
    ("error_type", "retryable"),
    [("overloaded_error", True), ("api_error", True), ("rate_limit_error", True), ("invalid_request_error", False)],
)
def test_error_events_inside_a_stream(error_type: str, retryable: bool) -> None:
    # The SDK raises an SSE error event as a status error carrying the stream's own 200.
    error = translate_error(status_error(200, body(error_type, "boom")), provider="p")

    assert (error.status, error.retryable) == (None, retryable)
    assert str(error) == f"p reported an error mid-stream ({error_type}): boom"


def test_an_overflow_inside_a_stream_is_an_overflow_too() -> None:
    error = translate_error(
        status_error(200, body("invalid_request_error", "prompt is too long: 9 tokens > 8 maximum"))
    )

    assert isinstance(error, ContextOverflowError) and error.window == 8


def test_non_json_bodies_are_shown_without_secrets() -> None:
    error = translate_error(status_error(502, "<html>bad gateway sk-secret-1</html>"), secrets=("sk-secret-1",))

    assert str(error) == "anthropic returned HTTP 502 (error): <html>bad gateway [redacted]</html>"
    assert error.retryable is True


def test_long_messages_are_clipped() -> None:
    error = translate_error(status_error(500, body("api_error", "x" * 5000)))

    assert len(str(error)) < 600


def test_timeouts_and_connection_failures_are_retryable() -> None:
    timeout = translate_error(anthropic.APITimeoutError(REQUEST))
    refused = anthropic.APIConnectionError(request=REQUEST)
    refused.__cause__ = OSError("Connection refused")

    assert (timeout.retryable, timeout.status, str(timeout)) == (True, None, "anthropic did not answer in time")
    assert str(translate_error(refused)) == "could not connect to anthropic: Connection refused"


def test_other_sdk_failures_are_not_retryable() -> None:
    unreadable = anthropic.APIResponseValidationError(httpx2.Response(200, request=REQUEST), body={"nonsense": 1})

    assert translate_error(unreadable).retryable is False
    assert translate_error(anthropic.CredentialsError("no credentials")).retryable is False


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, 0.0),
        ({}, None),
    ],
)
def test_retry_after_seconds(headers: dict[str, str], seconds: float | None) -> None:
    exc = status_error(429, body("rate_limit_error", "slow down"), headers)
    translated = translate_error(exc)

    assert translated.retry_after == seconds


def test_retry_after_as_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    seconds = translate_error(status_error(529, {}, {"retry-after": when})).retry_after

    assert seconds is not None and 25 <= seconds <= 30
