"""AnthropicChatClient through the real anthropic SDK against a loopback server speaking the Messages API format."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import anthropic
import pytest

from ironhive.adapters.anthropic.client import AnthropicChatClient
from ironhive.adapters.anthropic.reasoning import signed_part
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    ContentPart,
    JsonValue,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from tests.support.anthropic_server import (
    SIGNATURE,
    LoopbackAnthropicServer,
    MessageReply,
    ScriptedCall,
    TokenUsage,
    error_body,
    stream_events,
)

API_KEY = "sk-ant-loopback-secret-key-0123456789"
MODEL = "claude-sonnet-4-5"
HELLO = [ChatMessage.of_text(Role.USER, "Say hello")]
READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@pytest.fixture
def server() -> Iterator[LoopbackAnthropicServer]:
    with LoopbackAnthropicServer(api_key=API_KEY) as running:
        yield running


@pytest.fixture
async def client(server: LoopbackAnthropicServer) -> AsyncIterator[AnthropicChatClient]:
    counter = itertools.count(1)
    async with AnthropicChatClient(
        api_key=API_KEY, model=MODEL, base_url=server.base_url, id_factory=lambda: f"generated_{next(counter)}"
    ) as chat:
        yield chat


async def collect(
    client: AnthropicChatClient, options: ChatOptions | None = None, messages: list[ChatMessage] | None = None
) -> list[ChatUpdate]:
    return [update async for update in client.get_streaming_response(messages or HELLO, options or ChatOptions())]


def calls_of(updates: list[ChatUpdate]) -> list[ToolCallPart]:
    return [call for update in updates for call in update.tool_calls]


# -- text -----------------------------------------------------------------------------------------------------------


async def test_streamed_text_arrives_as_ordered_deltas_then_finish_then_usage(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("Hello there", chunks=["Hel", "lo", " the", "re"], usage=(10, 4))

    updates = await collect(client)

    assert [update.text_delta for update in updates if update.text_delta] == ["Hel", "lo", " the", "re"]
    assert [update.finish_reason for update in updates if update.finish_reason] == ["stop"]
    assert [update.usage for update in updates if update.usage] == [
        Usage(input_tokens=10, output_tokens=4, cached_input_tokens=0)
    ]
    assert updates[-1].usage is not None
    request = server.requests[0]
    assert request["stream"] is True
    assert request["model"] == MODEL
    assert request["max_tokens"] == 4096
    assert request["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}]
    headers = server.request_headers[0]
    assert API_KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert headers["anthropic-version"]


async def test_non_streaming_text_with_usage(server: LoopbackAnthropicServer, client: AnthropicChatClient) -> None:
    server.enqueue_text("Hello", usage=(7, 1), stop_reason="max_tokens")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.role is Role.ASSISTANT
    assert response.message.parts == (TextPart(text="Hello"),)
    assert response.usage == Usage(input_tokens=7, output_tokens=1, cached_input_tokens=0)
    assert response.finish_reason == "length"
    assert "stream" not in server.requests[0]


async def test_client_satisfies_the_chat_client_port(client: AnthropicChatClient) -> None:
    assert isinstance(client, ChatClient)
    assert client.model == MODEL
    assert client.provider_name == "anthropic"


async def test_cache_tokens_count_as_input(server: LoopbackAnthropicServer, client: AnthropicChatClient) -> None:
    cached = TokenUsage(
        input_tokens=12, output_tokens=30, cache_creation_input_tokens=2000, cache_read_input_tokens=500
    )
    server.enqueue_text("a", usage=cached).enqueue_text("b", usage=cached)

    streamed = [update.usage for update in await collect(client) if update.usage]
    whole = await client.get_response(HELLO, ChatOptions())

    assert streamed == [Usage(input_tokens=2512, output_tokens=30, cached_input_tokens=500)]
    assert whole.usage == Usage(input_tokens=2512, output_tokens=30, cached_input_tokens=500)


# -- tool calls -----------------------------------------------------------------------------------------------------


async def test_tool_input_in_pieces_arrives_as_one_complete_call(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    arguments: dict[str, JsonValue] = {"path": "src/ironhive", "recursive": True, "depth": 2}
    server.enqueue_tool_use([("toolu_1", "list_directory", arguments)], usage=(30, 12), argument_piece=4)

    updates = await collect(client)

    assert [update.tool_calls for update in updates if update.tool_calls] == [
        (
            ToolCallPart(
                call_id="toolu_1",
                name="list_directory",
                arguments=arguments,
                arguments_text='{"path": "src/ironhive", "recursive": true, "depth": 2}',
            ),
        )
    ]
    assert [update.finish_reason for update in updates if update.finish_reason] == ["tool_calls"]
    assert all(not update.text_delta for update in updates)
    assert updates[-1].usage == Usage(input_tokens=30, output_tokens=12, cached_input_tokens=0)


def test_the_loopback_server_streams_tool_input_in_pieces() -> None:
    reply = MessageReply(calls=[ScriptedCall(call_id="toolu_c", name="t", arguments={"path": "."})], argument_piece=4)

    events = stream_events(reply, ["toolu_c"])

    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 5,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1][1]["content_block"] == {"type": "tool_use", "id": "toolu_c", "name": "t", "input": {}}
    pieces = [data["delta"]["partial_json"] for name, data in events if name == "content_block_delta"]
    assert pieces == ["", '{"pa', 'th":', ' "."', "}"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


async def test_a_tool_round_sends_the_call_and_its_result_back(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_tool_use(
        [("toolu_a", "read_file", {"path": "README.md"}), ("toolu_b", "read_file", {"path": "missing.md"})],
        text="Reading both.",
    )
    server.enqueue_text("Done.")
    options = ChatOptions(tools=(READ_FILE,))

    first = await collect(client, options)
    calls = calls_of(first)
    history = [
        *HELLO,
        ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Reading both."), *calls)),
        ChatMessage(
            role=Role.TOOL,
            parts=(
                ToolResultPart(call_id="toolu_a", name="read_file", result="# ironhive", success=True),
                ToolResultPart(call_id="toolu_b", name="read_file", result="no such file", success=False),
            ),
        ),
    ]
    second = await collect(client, options, history)

    assert [(call.call_id, call.arguments) for call in calls] == [
        ("toolu_a", {"path": "README.md"}),
        ("toolu_b", {"path": "missing.md"}),
    ]
    assert "".join(update.text_delta for update in second) == "Done."
    assert server.requests[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "README.md"}},
                {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"path": "missing.md"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "# ironhive"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "no such file", "is_error": True},
            ],
        },
    ]


async def test_malformed_input_keeps_raw_text_and_says_why(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_tool_use([("toolu_1", "read_file", '{"path": "README.md"'), ("toolu_2", "read_file", "[1, 2]")])

    broken, not_object = calls_of(await collect(client))

    assert broken.arguments is None
    assert broken.arguments_text == '{"path": "README.md"'
    assert broken.parse_error is not None and broken.parse_error.startswith("JSONDecodeError")
    assert not_object.arguments is None
    assert not_object.parse_error is not None and "not list" in not_object.parse_error


async def test_a_call_without_input_has_empty_arguments(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_tool_use([(None, "get_time", "")])

    (call,) = calls_of(await collect(client))

    assert call.call_id.startswith("toolu_01Loopback")
    assert (call.name, call.arguments, call.parse_error) == ("get_time", {}, None)


async def test_non_streaming_tool_use(server: LoopbackAnthropicServer, client: AnthropicChatClient) -> None:
    server.enqueue_tool_use([("toolu_1", "read_file", {"path": "a.txt"})], text="Reading it.", usage=(3, 4))

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.text == "Reading it."
    assert response.message.tool_calls == (
        ToolCallPart(
            call_id="toolu_1", name="read_file", arguments={"path": "a.txt"}, arguments_text='{"path": "a.txt"}'
        ),
    )
    assert response.finish_reason == "tool_calls"


# -- thinking -------------------------------------------------------------------------------------------------------


async def test_thinking_deltas_stay_apart_from_the_answer(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("42", chunks=["4", "2"], thinking=["Let me ", "think."])

    updates = await collect(client, ChatOptions(reasoning_effort="medium"))

    streamed = [(u.thinking_delta, u.text_delta) for u in updates if u.thinking_delta or u.text_delta]
    assert streamed == [("Let me ", ""), ("think.", ""), ("", "4"), ("", "2")]
    request = server.requests[0]
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert request["max_tokens"] == 4096 + 4096


async def test_non_streaming_thinking_becomes_a_thinking_part(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("42", thinking="Six times seven.")

    response = await client.get_response(HELLO, ChatOptions(reasoning_effort="low"))

    assert response.message.parts == (signed_part("Six times seven.", SIGNATURE), TextPart(text="42"))


@pytest.mark.parametrize("streaming", [True, False])
async def test_signed_thinking_goes_back_in_the_next_request_of_a_tool_round(
    server: LoopbackAnthropicServer, client: AnthropicChatClient, streaming: bool
) -> None:
    server.enqueue_tool_use([("toolu_r", "read_file", {"path": "a"})], thinking=["I need ", "the file."])
    server.enqueue_text("It says hi.")
    options = ChatOptions(tools=(READ_FILE,), reasoning_effort="high")

    if streaming:
        updates = await collect(client, options)
        blocks = [update.thinking_block for update in updates if update.thinking_block is not None]
        parts: tuple[ContentPart, ...] = (*blocks, *calls_of(updates))
    else:
        parts = (await client.get_response(HELLO, options)).message.parts
    assert parts[0] == signed_part("I need the file.", SIGNATURE)  # the signature travels in the part, not in memory
    client = AnthropicChatClient(api_key=API_KEY, model=MODEL, base_url=server.base_url)  # a fresh one: no memory
    history = [
        *HELLO,
        ChatMessage(role=Role.ASSISTANT, parts=parts),
        ChatMessage(
            role=Role.TOOL, parts=(ToolResultPart(call_id="toolu_r", name="read_file", result="hi", success=True),)
        ),
    ]
    answer = await client.get_response(history, options)
    await client.aclose()

    assert answer.message.text == "It says hi."
    follow_up = server.requests[1]
    assert follow_up["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert follow_up["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "I need the file.", "signature": SIGNATURE},
        {"type": "tool_use", "id": "toolu_r", "name": "read_file", "input": {"path": "a"}},
    ]


async def test_a_tool_round_without_its_signed_thinking_is_sent_without_thinking(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("It says hi.")
    call = ToolCallPart(call_id="toolu_old", name="read_file", arguments={"path": "a"}, arguments_text='{"path":"a"}')
    history = [
        *HELLO,
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="from a restored session"), call)),
        ChatMessage(
            role=Role.TOOL, parts=(ToolResultPart(call_id="toolu_old", name="read_file", result="hi", success=True),)
        ),
    ]

    response = await client.get_response(history, ChatOptions(tools=(READ_FILE,), reasoning_effort="high"))

    assert response.message.text == "It says hi."
    request = server.requests[0]
    assert "thinking" not in request
    assert request["max_tokens"] == 4096
    assert [block["type"] for block in request["messages"][1]["content"]] == ["tool_use"]


# -- request mapping ------------------------------------------------------------------------------------------------


async def test_request_carries_system_tools_choice_temperature_and_limit(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("Done.")
    large = "You are a careful coding agent. " * 130  # > 1024 tokens at 4 characters a token
    conversation = [
        ChatMessage.of_text(Role.SYSTEM, large),
        ChatMessage.of_text(Role.SYSTEM, "Today is Monday."),
        ChatMessage.of_text(Role.USER, "Read README.md"),
        ChatMessage.of_text(Role.USER, "Please."),
    ]
    options = ChatOptions(
        model="claude-haiku-4-5",
        temperature=0.2,
        max_output_tokens=512,
        tools=(READ_FILE,),
        tool_mode="require:read_file",
    )

    await client.get_response(conversation, options)

    request = server.requests[0]
    assert request["model"] == "claude-haiku-4-5"
    assert request["max_tokens"] == 512
    assert request["temperature"] == 0.2
    assert request["tool_choice"] == {"type": "tool", "name": "read_file"}
    assert request["tools"] == [
        {
            "name": "read_file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "description": "Read a file.",
        }
    ]
    assert request["system"] == [
        {"type": "text", "text": large, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Today is Monday."},
    ]
    assert request["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Read README.md"}, {"type": "text", "text": "Please."}]}
    ]


async def test_thinking_takes_the_temperature_out_and_forced_tools_take_thinking_out(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("a").enqueue_text("b").enqueue_text("c")

    await client.get_response(
        HELLO, ChatOptions(temperature=0.3, reasoning_effort="extra_high", max_output_tokens=8000)
    )
    await client.get_response(HELLO, ChatOptions(tools=(READ_FILE,), tool_mode="require_any", reasoning_effort="low"))
    await client.get_response(HELLO, ChatOptions(temperature=0.0, reasoning_effort="none"))

    thinking, forced, off = server.requests
    assert thinking["thinking"] == {"type": "enabled", "budget_tokens": 7999}
    assert (thinking["max_tokens"], "temperature" in thinking) == (8000, False)
    assert forced["tool_choice"] == {"type": "any"}
    assert "thinking" not in forced
    assert off["thinking"] == {"type": "disabled"}
    assert off["temperature"] == 0.0


async def test_adaptive_models_get_adaptive_thinking_and_an_effort(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("a").enqueue_text("b")

    await client.get_response(HELLO, ChatOptions(model="claude-opus-4-6", reasoning_effort="extra_high"))
    await client.get_response(HELLO, ChatOptions(model="claude-opus-5", temperature=0.5))

    adaptive, newest = server.requests
    assert adaptive["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert adaptive["output_config"] == {"effort": "xhigh"}
    assert adaptive["max_tokens"] == 4096 + 32000
    assert "temperature" not in newest and "thinking" not in newest


# -- errors ---------------------------------------------------------------------------------------------------------


async def test_rate_limit_is_retryable_and_keeps_retry_after(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_rate_limit(retry_after=2)

    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())

    error = caught.value
    assert (error.status, error.retryable, error.provider, error.retry_after) == (429, True, "anthropic", 2.0)
    assert "429" in str(error) and "rate_limit_error" in str(error) and "exceed the rate limit" in str(error)
    assert isinstance(error.__cause__, anthropic.RateLimitError)
    assert error.retry_after == 2.0


async def test_rate_limit_on_a_stream_is_translated_too(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_rate_limit(retry_after=5)

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert (caught.value.status, caught.value.retryable) == (429, True)
    assert caught.value.retry_after == 5.0


@pytest.mark.parametrize(
    ("enqueue", "status", "error_type"),
    [("enqueue_overloaded", 529, "overloaded_error"), ("enqueue_server_error", 500, "api_error")],
)
async def test_overload_and_server_errors_are_retryable(
    server: LoopbackAnthropicServer, client: AnthropicChatClient, enqueue: str, status: int, error_type: str
) -> None:
    getattr(server, enqueue)()

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert (caught.value.status, caught.value.retryable) == (status, True)
    assert f"HTTP {status} ({error_type})" in str(caught.value)


@pytest.mark.parametrize(("enqueue", "status"), [("enqueue_auth_error", 401), ("enqueue_permission_error", 403)])
async def test_auth_and_permission_errors_are_not_retryable(
    server: LoopbackAnthropicServer, client: AnthropicChatClient, enqueue: str, status: int
) -> None:
    getattr(server, enqueue)()

    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())

    assert (caught.value.status, caught.value.retryable, caught.value.retry_after) == (status, False, None)


async def test_a_wrong_key_is_refused_and_never_shown() -> None:
    wrong_key = "sk-ant-wrong-key-that-must-not-leak"
    with LoopbackAnthropicServer(api_key=API_KEY) as server:
        server.enqueue_error(401, error_body("authentication_error", f"invalid x-api-key {wrong_key}"))
        async with AnthropicChatClient(api_key=wrong_key, model=MODEL, base_url=server.base_url) as chat:
            with pytest.raises(ProviderError) as refused:
                await chat.get_response(HELLO, ChatOptions())

    assert (refused.value.status, refused.value.retryable) == (401, False)
    assert wrong_key not in str(refused.value)
    assert server.pending_replies == 1  # refused before the script was consulted


async def test_the_key_is_redacted_from_server_messages(server: LoopbackAnthropicServer) -> None:
    server.enqueue_error(400, error_body("invalid_request_error", f"bad request from {API_KEY}"))
    async with AnthropicChatClient(api_key=API_KEY, model=MODEL, base_url=server.base_url) as chat:
        with pytest.raises(ProviderError) as caught:
            await chat.get_response(HELLO, ChatOptions())

    assert API_KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)
    assert (caught.value.status, caught.value.retryable) == (400, False)


@pytest.mark.parametrize("streaming", [True, False])
async def test_prompt_too_long_is_an_overflow_with_the_window(
    server: LoopbackAnthropicServer, client: AnthropicChatClient, streaming: bool
) -> None:
    server.enqueue_prompt_too_long(tokens=210_000, window=200_000)

    with pytest.raises(ContextOverflowError) as caught:
        if streaming:
            await collect(client)
        else:
            await client.get_response(HELLO, ChatOptions())

    assert caught.value.window == 200_000
    assert (caught.value.status, caught.value.retryable) == (400, False)
    assert "prompt is too long: 210000 tokens > 200000 maximum" in str(caught.value)


async def test_an_error_event_mid_stream_is_translated_after_the_text_before_it(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_stream_error("overloaded_error", "Overloaded", before=["Par", "tial"])
    received: list[str] = []

    with pytest.raises(ProviderError) as caught:
        async for update in client.get_streaming_response(HELLO, ChatOptions()):
            received.append(update.text_delta)

    assert received == ["Par", "tial"]
    assert (caught.value.retryable, caught.value.status) == (True, None)
    assert "overloaded_error" in str(caught.value) and "Overloaded" in str(caught.value)


async def test_a_non_transient_error_event_is_not_retryable(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_stream_error("invalid_request_error", "Output blocked by content filtering policy")

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert caught.value.retryable is False
    assert not isinstance(caught.value, ContextOverflowError)


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with AnthropicChatClient(api_key=API_KEY, model=MODEL, base_url=f"http://127.0.0.1:{port}") as chat:
        with pytest.raises(ProviderError) as caught:
            await chat.get_response(HELLO, ChatOptions())

    assert (caught.value.retryable, caught.value.status) == (True, None)
    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)


async def test_an_exhausted_script_answers_500(client: AnthropicChatClient) -> None:
    with pytest.raises(ProviderError, match="script ran out") as caught:
        await client.get_response(HELLO, ChatOptions())

    assert caught.value.retryable is True


# -- the loopback server's own checks -------------------------------------------------------------------------------


async def test_the_server_refuses_what_the_api_refuses(server: LoopbackAnthropicServer) -> None:
    server.enqueue_text("never sent")
    sdk = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=server.base_url, max_retries=0)
    async with sdk:
        with pytest.raises(anthropic.BadRequestError, match="forces tool use"):
            await sdk.messages.create(
                model=MODEL,
                max_tokens=2048,
                messages=[{"role": "user", "content": "hi"}],
                tools=[{"name": "t", "input_schema": {"type": "object"}}],
                tool_choice={"type": "any"},
                thinking={"type": "enabled", "budget_tokens": 1024},
            )
        with pytest.raises(anthropic.BadRequestError, match=r"greater than `thinking\.budget_tokens`"):
            await sdk.messages.create(
                model=MODEL,
                max_tokens=1024,
                messages=[{"role": "user", "content": "hi"}],
                thinking={"type": "enabled", "budget_tokens": 1024},
            )

    assert server.pending_replies == 1


async def test_models_are_listed_page_by_page() -> None:
    with LoopbackAnthropicServer(api_key=API_KEY, models=("claude-a", "claude-b", "claude-c")) as server:
        async with anthropic.AsyncAnthropic(api_key=API_KEY, base_url=server.base_url, max_retries=0) as sdk:
            models = [model async for model in sdk.models.list(limit=2)]
            first_page = await sdk.models.list(limit=2)

    assert [model.id for model in models] == ["claude-a", "claude-b", "claude-c"]
    assert (first_page.has_more, first_page.last_id) == (True, "claude-b")
    assert models[0].lifecycle == "active"


# -- lifecycle ------------------------------------------------------------------------------------------------------


async def test_stopping_a_stream_early_releases_the_connection(
    server: LoopbackAnthropicServer, client: AnthropicChatClient
) -> None:
    server.enqueue_text("abcdef", chunks=list("abcdef"), chunk_delay=0.01).enqueue_text("next")
    stream = client.get_streaming_response(HELLO, ChatOptions())

    first = await anext(stream)
    await stream.aclose()

    assert first.text_delta == "a"
    assert (await client.get_response(HELLO, ChatOptions())).message.text == "next"


async def test_function_replies_see_the_request(server: LoopbackAnthropicServer, client: AnthropicChatClient) -> None:
    server.enqueue_function(lambda body: f"you said {body['messages'][-1]['content'][0]['text']}")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.text == "you said Say hello"


def test_constructor_validates_settings() -> None:
    with pytest.raises(ConfigurationError, match="model"):
        AnthropicChatClient(api_key=API_KEY, model=" ")
    with pytest.raises(ConfigurationError, match="API key"):
        AnthropicChatClient(api_key="", model=MODEL)
    with pytest.raises(ConfigurationError, match="timeout"):
        AnthropicChatClient(api_key=API_KEY, model=MODEL, timeout=0)
    with pytest.raises(ConfigurationError, match="output limit"):
        AnthropicChatClient(api_key=API_KEY, model=MODEL, max_output_tokens_default=0)


async def test_a_keyless_proxy_is_allowed_and_the_default_limit_is_configurable() -> None:
    with LoopbackAnthropicServer() as open_server:
        open_server.enqueue_text("hi")
        async with AnthropicChatClient(
            api_key="", model=MODEL, base_url=open_server.base_url, max_output_tokens_default=100
        ) as chat:
            assert (await chat.get_response(HELLO, ChatOptions())).message.text == "hi"

    assert open_server.requests[0]["max_tokens"] == 100


@pytest.mark.parametrize("suffix", ["/", "/v1", "/v1/"])
async def test_a_base_url_ending_in_v1_is_not_doubled(server: LoopbackAnthropicServer, suffix: str) -> None:
    server.enqueue_text("found")
    async with AnthropicChatClient(api_key=API_KEY, model=MODEL, base_url=server.base_url + suffix) as chat:
        assert (await chat.get_response(HELLO, ChatOptions())).message.text == "found"


def test_importing_the_adapter_package_imports_no_sdk() -> None:
    code = "import sys, ironhive.adapters.anthropic; print('anthropic' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "False"
