"""Pure tests (no I/O) of the OpenAI adapter's mapping and error translation."""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.shared import ReasoningEffort as SdkReasoningEffort

from ironhive.adapters.openai.errors import translate_error
from ironhive.adapters.openai.mapping import (
    REASONING_EFFORTS,
    StreamAccumulator,
    build_request,
    parse_arguments,
    to_chat_response,
    to_finish_reason,
    to_openai_messages,
    to_tool_choice,
)
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

SPEC = ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object", "properties": {}})


def ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"gen_{next(counter)}"


def chunk(
    *, delta: dict[str, Any] | None = None, finish: str | None = None, usage: tuple[int, int] | None = None
) -> ChatCompletionChunk:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
    }
    if usage is not None:
        payload["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return ChatCompletionChunk.model_validate(payload)


def feed_all(accumulator: StreamAccumulator, chunks: list[ChatCompletionChunk]) -> list[ChatUpdate]:
    updates = [update for item in chunks for update in accumulator.feed(item)]
    return updates + accumulator.finish()


# -- messages -------------------------------------------------------------------------------------------------------


def test_messages_map_roles_text_and_drop_thinking() -> None:
    messages = [
        ChatMessage.of_text(Role.SYSTEM, "Be brief."),
        ChatMessage.of_text(Role.USER, "Hi"),
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="hmm"), TextPart(text="Hello"))),
    ]

    assert to_openai_messages(messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]


def test_each_tool_result_is_its_own_tool_message_before_any_text() -> None:
    results = (
        ToolResultPart(call_id="a", name="t", result="one", success=True),
        ToolResultPart(call_id="b", name="t", result="two", success=False),
    )
    messages = [ChatMessage(role=Role.USER, parts=(*results, TextPart(text="and now?")))]

    assert to_openai_messages(messages) == [
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two"},
        {"role": "user", "content": "and now?"},
    ]


def test_assistant_tool_calls_send_the_original_arguments_text() -> None:
    call = ToolCallPart(call_id="c1", name="t", arguments={"a": 1}, arguments_text='{ "a" : 1 }')
    blank = ToolCallPart(call_id="c2", name="u", arguments={}, arguments_text="")

    (mapped,) = to_openai_messages([ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Let me."), call, blank))])

    assert mapped == {
        "role": "assistant",
        "content": "Let me.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": '{ "a" : 1 }'}},
            {"id": "c2", "type": "function", "function": {"name": "u", "arguments": "{}"}},
        ],
    }


def test_an_empty_assistant_message_has_empty_content() -> None:
    assert to_openai_messages([ChatMessage(role=Role.ASSISTANT)]) == [{"role": "assistant", "content": ""}]


# -- options --------------------------------------------------------------------------------------------------------


def test_unset_options_are_omitted_and_empty_tools_send_none() -> None:
    request = build_request([], ChatOptions(tools=(), tool_mode="none"), default_model="gpt-x")

    assert dict(request) == {"model": "gpt-x", "messages": []}


def test_options_map_onto_request_fields() -> None:
    options = ChatOptions(
        model="o-override", temperature=0.0, max_output_tokens=10, tools=(SPEC,), tool_mode="require_any"
    )

    request = build_request([], options, default_model="gpt-x")

    assert request == {
        "model": "o-override",
        "messages": [],
        "temperature": 0.0,
        "max_completion_tokens": 10,
        "tools": [
            {
                "type": "function",
                "function": {"name": "read_file", "description": "Read a file.", "parameters": dict(SPEC.parameters)},
            }
        ],
        "tool_choice": "required",
    }


def test_legacy_max_tokens_field() -> None:
    request = build_request([], ChatOptions(max_output_tokens=5), default_model="m", use_max_tokens_field=True)

    assert request == {"model": "m", "messages": [], "max_tokens": 5}


@pytest.mark.parametrize(
    ("mode", "choice"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("require_any", "required"),
        ("require:read_file", {"type": "function", "function": {"name": "read_file"}}),
    ],
)
def test_tool_modes(mode: str, choice: object) -> None:
    assert to_tool_choice(mode) == choice


@pytest.mark.parametrize("mode", ["always", "require:", "require: ", "REQUIRE_ANY", ""])
def test_unknown_tool_modes_are_errors(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown tool mode"):
        build_request([], ChatOptions(tools=(SPEC,), tool_mode=mode), default_model="m")


def test_every_reasoning_effort_maps_onto_a_value_the_sdk_accepts() -> None:
    (literal, _none) = typing.get_args(SdkReasoningEffort)
    accepted = set(typing.get_args(literal))

    assert set(REASONING_EFFORTS) == {"none", "low", "medium", "high", "extra_high"}
    assert set(REASONING_EFFORTS.values()) <= accepted
    assert (
        build_request([], ChatOptions(reasoning_effort="extra_high"), default_model="m")["reasoning_effort"] == "xhigh"
    )


# -- arguments and finish reasons -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "arguments", "error_part"),
    [
        ('{"a": [1, null]}', {"a": [1, None]}, None),
        ("", {}, None),
        ("  \n", {}, None),
        ("{", None, "not valid JSON"),
        ('"text"', None, "not str"),
        ("null", None, "not NoneType"),
    ],
)
def test_parse_arguments(text: str, arguments: object, error_part: str | None) -> None:
    parsed, error = parse_arguments(text)

    assert parsed == arguments
    if error_part is None:
        assert error is None
    else:
        assert error is not None and error_part in error


@pytest.mark.parametrize(
    ("raw", "has_calls", "expected"),
    [
        (None, False, None),
        ("stop", False, "stop"),
        ("length", False, "length"),
        ("content_filter", False, "content_filter"),
        ("function_call", False, "tool_calls"),
        ("stop", True, "tool_calls"),
        ("eos", False, "stop"),
    ],
)
def test_finish_reasons(raw: str | None, has_calls: bool, expected: str | None) -> None:
    assert to_finish_reason(raw, has_tool_calls=has_calls) == expected


# -- streaming accumulator ------------------------------------------------------------------------------------------


def test_accumulator_emits_text_thinking_and_usage() -> None:
    updates = feed_all(
        StreamAccumulator(ids()),
        [
            chunk(delta={"role": "assistant", "content": None, "reasoning": "plan"}),
            chunk(delta={"content": "Hi"}),
            chunk(delta={}, finish="stop"),
            chunk(usage=(3, 1)),
        ],
    )

    assert updates == [
        ChatUpdate(thinking_delta="plan"),
        ChatUpdate(text_delta="Hi"),
        ChatUpdate(finish_reason="stop"),
        ChatUpdate(usage=Usage(input_tokens=3, output_tokens=1)),
    ]


def test_accumulator_assembles_interleaved_fragments_by_index() -> None:
    def fragment(index: int, **fields: Any) -> ChatCompletionChunk:
        return chunk(delta={"tool_calls": [{"index": index, **fields}]})

    updates = feed_all(
        StreamAccumulator(ids()),
        [
            fragment(0, id="a", type="function", function={"name": "one", "arguments": '{"x"'}),
            fragment(1, type="function", function={"name": "two", "arguments": ""}),
            fragment(0, function={"arguments": ": 1}"}),
            fragment(1, function={"arguments": "[]"}),
            chunk(delta={}, finish="stop"),
        ],
    )

    (update,) = updates
    assert update.finish_reason == "tool_calls"
    first, second = update.tool_calls
    assert first == ToolCallPart(call_id="a", name="one", arguments={"x": 1}, arguments_text='{"x": 1}')
    assert (second.call_id, second.name, second.arguments, second.arguments_text) == ("gen_1", "two", None, "[]")
    assert second.parse_error == "arguments must be a JSON object, not list"


def test_tool_calls_of_a_stream_without_finish_reason_are_flushed_at_the_end() -> None:
    accumulator = StreamAccumulator(ids())

    assert accumulator.feed(chunk(delta={"tool_calls": [{"index": 0, "id": "z", "function": {"name": "t"}}]})) == []
    assert accumulator.finish() == [
        ChatUpdate(tool_calls=(ToolCallPart(call_id="z", name="t", arguments={}, arguments_text=""),))
    ]
    assert accumulator.finish() == []


# -- whole responses ------------------------------------------------------------------------------------------------


def completion(message: dict[str, Any], finish: str = "stop", choices: bool = True) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}] if choices else [],
            "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
        }
    )


def test_completion_with_reasoning_text_and_a_custom_tool_call() -> None:
    message = {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "why",
        "tool_calls": [{"id": "k", "type": "custom", "custom": {"name": "grep", "input": "raw text"}}],
    }

    response = to_chat_response(completion(message, finish="tool_calls"), ids())

    thinking, text, call = response.message.parts
    assert (thinking, text) == (ThinkingPart(text="why"), TextPart(text="ok"))
    assert isinstance(call, ToolCallPart)
    assert (call.call_id, call.name, call.arguments, call.arguments_text) == ("k", "grep", None, "raw text")
    assert call.parse_error is not None
    assert response.usage == Usage(input_tokens=2, output_tokens=3)
    assert response.finish_reason == "tool_calls"


def test_completion_without_choices_is_an_empty_assistant_message() -> None:
    response = to_chat_response(completion({}, choices=False), ids())

    assert response.message == ChatMessage(role=Role.ASSISTANT)
    assert response.finish_reason is None


# -- errors ---------------------------------------------------------------------------------------------------------

REQUEST = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def status_error(status: int, body: object, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response = httpx2.Response(status, headers=headers or {}, request=REQUEST)
    return openai.APIStatusError(f"Error code: {status}", response=response, body=body)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (404, False), (408, True), (409, True), (429, True), (500, True), (503, True)],
)
def test_status_errors(status: int, retryable: bool) -> None:
    error = translate_error(status_error(status, {"message": "nope", "type": "x"}), provider="acme")

    assert type(error) is ProviderError
    assert (error.status, error.retryable, error.provider) == (status, retryable, "acme")
    assert str(error) == f"acme returned HTTP {status}: nope"


def test_llama_cpp_overflow_reads_n_ctx() -> None:
    body = {
        "code": 400,
        "message": "the request exceeds the available context size",
        "type": "exceed_context_size_error",
        "n_ctx": 4096,
    }

    error = translate_error(status_error(400, body), provider="llama.cpp")

    assert isinstance(error, ContextOverflowError)
    assert error.window == 4096


def test_overflow_recognised_by_message_alone_and_window_may_be_unknown() -> None:
    stated = translate_error(
        status_error(400, {"message": "This model's maximum context length is 4096 tokens."}), provider="vllm"
    )
    unstated = translate_error(
        status_error(400, {"message": "too long", "code": "context_length_exceeded"}), provider="p"
    )

    assert isinstance(stated, ContextOverflowError) and stated.window == 4096
    assert isinstance(unstated, ContextOverflowError) and unstated.window is None


def test_non_json_error_bodies_and_secrets() -> None:
    error = translate_error(
        status_error(502, "<html>bad gateway sk-secret-1</html>"), provider="p", secrets=("sk-secret-1",)
    )

    assert str(error) == "p returned HTTP 502: <html>bad gateway [redacted]</html>"
    assert error.retryable is True


def test_long_messages_are_clipped() -> None:
    error = translate_error(status_error(500, {"message": "x" * 5000}), provider="p")

    assert len(str(error)) < 600


@pytest.mark.parametrize(("error_type", "retryable"), [("server_error", True), ("invalid_request_error", False)])
def test_errors_sent_inside_a_stream(error_type: str, retryable: bool) -> None:
    exc = openai.APIError("boom", REQUEST, body={"message": "boom", "type": error_type})

    error = translate_error(exc, provider="p")

    assert (error.status, error.retryable, str(error)) == (None, retryable, "p reported an error: boom")


def test_timeouts_are_retryable() -> None:
    error = translate_error(openai.APITimeoutError(REQUEST), provider="p")

    assert error.retryable is True and error.status is None


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
    exc = status_error(429, {"message": "slow down"}, headers)
    translated = translate_error(exc, provider="p")

    assert translated.retry_after == seconds


def test_retry_after_as_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    seconds = translate_error(status_error(503, {}, {"retry-after": when}), provider="p").retry_after

    assert seconds is not None and 25 <= seconds <= 30
