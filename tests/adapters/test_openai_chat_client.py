"""OpenAIChatClient through the real openai SDK against a loopback server speaking the chat-completions wire format."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    JsonValue,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from tests.support.openai_server import (
    LoopbackOpenAIServer,
    ScriptedCall,
    ToolCallsReply,
    error_body,
    stream_deltas,
)

API_KEY = "sk-loopback-secret-key-0123456789"
HELLO = [ChatMessage.of_text(Role.USER, "Say hello")]


@pytest.fixture
def server() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer(api_key=API_KEY) as running:
        yield running


@pytest.fixture
async def client(server: LoopbackOpenAIServer) -> AsyncIterator[OpenAIChatClient]:
    counter = itertools.count(1)
    async with OpenAIChatClient(
        api_key=API_KEY, model="gpt-test", base_url=server.base_url, id_factory=lambda: f"generated_{next(counter)}"
    ) as chat:
        yield chat


async def collect(client: OpenAIChatClient, options: ChatOptions | None = None) -> list[ChatUpdate]:
    return [update async for update in client.get_streaming_response(HELLO, options or ChatOptions())]


def only_tool_call_updates(updates: list[ChatUpdate]) -> list[ChatUpdate]:
    return [update for update in updates if update.tool_calls]


# -- text -----------------------------------------------------------------------------------------------------------


async def test_streamed_text_arrives_as_ordered_deltas_then_finish_then_usage(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_text("Hello there", chunks=["Hel", "lo", " the", "re"], usage=(10, 4))

    updates = await collect(client)

    assert [update.text_delta for update in updates if update.text_delta] == ["Hel", "lo", " the", "re"]
    assert [update.finish_reason for update in updates if update.finish_reason] == ["stop"]
    assert updates[-1].usage == Usage(input_tokens=10, output_tokens=4, cached_input_tokens=0, reasoning_tokens=0)
    request = server.requests[0]
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["model"] == "gpt-test"
    assert server.request_headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_non_streaming_text_with_usage(server: LoopbackOpenAIServer, client: OpenAIChatClient) -> None:
    server.enqueue_text("Hello", usage=(7, 1), finish_reason="length")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.role is Role.ASSISTANT
    assert response.message.parts == (TextPart(text="Hello"),)
    assert response.usage == Usage(input_tokens=7, output_tokens=1, cached_input_tokens=0, reasoning_tokens=0)
    assert response.finish_reason == "length"
    assert "stream" not in server.requests[0]


async def test_client_satisfies_the_chat_client_port(client: OpenAIChatClient) -> None:
    assert isinstance(client, ChatClient)
    assert client.model == "gpt-test"
    assert client.provider_name == "openai"


# -- tool calls -----------------------------------------------------------------------------------------------------


async def test_tool_call_split_over_chunks_arrives_once_complete_and_parsed(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    arguments: dict[str, JsonValue] = {"path": "src/ironhive", "recursive": True, "depth": 2}
    server.enqueue_tool_calls([("call_1", "list_directory", arguments)], usage=(30, 12), argument_piece=4)

    updates = await collect(client)

    calls = only_tool_call_updates(updates)
    assert len(calls) == 1
    assert calls[0].tool_calls == (
        ToolCallPart(
            call_id="call_1",
            name="list_directory",
            arguments=arguments,
            arguments_text='{"path": "src/ironhive", "recursive": true, "depth": 2}',
        ),
    )
    assert calls[0].finish_reason == "tool_calls"
    assert all(not update.text_delta for update in updates)
    assert updates[-1].usage == Usage(input_tokens=30, output_tokens=12, cached_input_tokens=0, reasoning_tokens=0)


def test_the_loopback_server_splits_arguments_over_several_deltas() -> None:
    reply = ToolCallsReply(calls=[ScriptedCall(call_id="c", name="t", arguments={"path": "."})], argument_piece=4)

    deltas = stream_deltas(reply)

    opening = deltas[0][0]
    assert opening["role"] == "assistant" and opening["content"] is None
    assert opening["tool_calls"] == [
        {"index": 0, "id": "c", "type": "function", "function": {"name": "t", "arguments": ""}}
    ]
    pieces = [delta["tool_calls"][0]["function"]["arguments"] for delta, _ in deltas[1:-1]]
    assert pieces == ['{"pa', 'th":', ' "."', "}"]
    assert deltas[-1] == ({}, "tool_calls")


async def test_two_parallel_tool_calls_keep_their_order_and_ids(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_tool_calls(
        [("call_a", "read_file", {"path": "README.md"}), ("call_b", "list_directory", {"path": "docs"})]
    )

    updates = await collect(client)

    (update,) = only_tool_call_updates(updates)
    assert [(call.call_id, call.name, call.arguments) for call in update.tool_calls] == [
        ("call_a", "read_file", {"path": "README.md"}),
        ("call_b", "list_directory", {"path": "docs"}),
    ]


async def test_malformed_arguments_keep_raw_text_and_say_why(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_tool_calls([("call_1", "read_file", '{"path": "README.md"'), ("call_2", "read_file", "[1, 2]")])

    (update,) = only_tool_call_updates(await collect(client))

    broken, not_object = update.tool_calls
    assert broken.arguments is None
    assert broken.arguments_text == '{"path": "README.md"'
    assert broken.parse_error is not None and "not valid JSON" in broken.parse_error
    assert not_object.arguments is None
    assert not_object.parse_error == "arguments must be a JSON object, not list"


async def test_call_without_id_gets_one_and_empty_arguments_mean_empty_object(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_tool_calls([(None, "get_time", "")])

    (update,) = only_tool_call_updates(await collect(client))

    assert update.tool_calls == (
        ToolCallPart(call_id="generated_1", name="get_time", arguments={}, arguments_text="", parse_error=None),
    )


async def test_non_streaming_tool_calls(server: LoopbackOpenAIServer, client: OpenAIChatClient) -> None:
    server.enqueue_tool_calls([("call_1", "read_file", {"path": "a.txt"})], text="Reading it.", usage=(3, 4))

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.text == "Reading it."
    assert response.message.tool_calls == (
        ToolCallPart(
            call_id="call_1", name="read_file", arguments={"path": "a.txt"}, arguments_text='{"path": "a.txt"}'
        ),
    )
    assert response.finish_reason == "tool_calls"


# -- reasoning ------------------------------------------------------------------------------------------------------


async def test_reasoning_content_becomes_thinking_deltas_before_the_answer(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_text("42", chunks=["4", "2"], reasoning=["Let me ", "think."])

    updates = await collect(client)

    streamed = [
        (update.thinking_delta, update.text_delta) for update in updates if update.thinking_delta or update.text_delta
    ]
    assert streamed == [("Let me ", ""), ("think.", ""), ("", "4"), ("", "2")]


async def test_non_streaming_reasoning_content_becomes_a_thinking_part(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_text("42", reasoning="Six times seven.")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.parts == (ThinkingPart(text="Six times seven."), TextPart(text="42"))


# -- request mapping ------------------------------------------------------------------------------------------------


async def test_request_carries_messages_tools_and_options(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_text("Done.")
    conversation = [
        ChatMessage.of_text(Role.SYSTEM, "You are terse."),
        ChatMessage.of_text(Role.USER, "Read README.md"),
        ChatMessage(
            role=Role.ASSISTANT,
            parts=(
                ThinkingPart(text="I should read it."),
                ToolCallPart(
                    call_id="call_1",
                    name="read_file",
                    arguments={"path": "README.md"},
                    arguments_text='{"path":"README.md"}',
                ),
            ),
        ),
        ChatMessage(
            role=Role.TOOL,
            parts=(ToolResultPart(call_id="call_1", name="read_file", result="# ironhive", success=True),),
        ),
    ]
    read_file = ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    options = ChatOptions(
        model="gpt-other",
        temperature=0.2,
        max_output_tokens=512,
        tools=(read_file,),
        tool_mode="require:read_file",
        reasoning_effort="extra_high",
    )

    await client.get_response(conversation, options)

    request = server.requests[0]
    assert request["model"] == "gpt-other"
    assert request["temperature"] == 0.2
    assert request["max_completion_tokens"] == 512
    assert "max_tokens" not in request
    assert request["reasoning_effort"] == "xhigh"
    assert request["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert request["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            },
        }
    ]
    assert request["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Read README.md"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"README.md"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "# ironhive"},
    ]


async def test_unset_options_are_left_out_and_legacy_max_tokens_is_a_flag(server: LoopbackOpenAIServer) -> None:
    server.enqueue_text("a").enqueue_text("b")
    async with OpenAIChatClient(
        api_key=API_KEY, model="gpt-test", base_url=server.base_url, use_max_tokens_field=True
    ) as legacy:
        await legacy.get_response(HELLO, ChatOptions(tools=()))
        await legacy.get_response(HELLO, ChatOptions(max_output_tokens=64))

    bare, limited = server.requests
    assert set(bare) == {"model", "messages"}
    assert limited["max_tokens"] == 64
    assert "max_completion_tokens" not in limited


# -- errors ---------------------------------------------------------------------------------------------------------


async def test_rate_limit_is_retryable_and_keeps_retry_after(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_rate_limit(retry_after=2)

    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())

    error = caught.value
    assert (error.status, error.retryable, error.provider) == (429, True, "openai")
    assert "429" in str(error) and "Rate limit reached" in str(error)
    assert isinstance(error.__cause__, openai.RateLimitError)
    assert error.retry_after == 2.0


async def test_rate_limit_on_a_stream_is_translated_too(server: LoopbackOpenAIServer, client: OpenAIChatClient) -> None:
    server.enqueue_rate_limit(retry_after=5)

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert (caught.value.status, caught.value.retryable) == (429, True)
    assert caught.value.retry_after == 5.0


async def test_authentication_failure_is_not_retryable_and_never_shows_the_key() -> None:
    wrong_key = "sk-wrong-key-that-must-not-leak"
    with LoopbackOpenAIServer() as server:
        server.enqueue_error(401, error_body(f"Incorrect API key provided: {wrong_key}.", "invalid_request_error"))
        async with OpenAIChatClient(api_key=wrong_key, model="gpt-test", base_url=server.base_url) as chat:
            with pytest.raises(ProviderError) as caught:
                await chat.get_response(HELLO, ChatOptions())

    assert (caught.value.status, caught.value.retryable) == (401, False)
    assert wrong_key not in str(caught.value)
    assert "[redacted]" in str(caught.value)


async def test_scripted_auth_error_helper(server: LoopbackOpenAIServer, client: OpenAIChatClient) -> None:
    server.enqueue_auth_error()

    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())

    assert (caught.value.status, caught.value.retryable) == (401, False)
    assert caught.value.retry_after is None


@pytest.mark.parametrize(("enqueue", "status"), [("enqueue_server_error", 500), ("enqueue_overloaded", 503)])
async def test_server_errors_are_retryable(
    server: LoopbackOpenAIServer, client: OpenAIChatClient, enqueue: str, status: int
) -> None:
    getattr(server, enqueue)()

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert (caught.value.status, caught.value.retryable) == (status, True)
    assert f"HTTP {status}" in str(caught.value)


async def test_context_length_exceeded_is_an_overflow_with_the_window(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_context_length_exceeded(window=8192, requested=9100)

    with pytest.raises(ContextOverflowError) as caught:
        await client.get_response(HELLO, ChatOptions())

    assert caught.value.window == 8192
    assert (caught.value.status, caught.value.retryable) == (400, False)


async def test_error_in_the_middle_of_a_stream_is_translated_after_the_text_before_it(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_stream_error("The server had an error while processing your request.", before=["Par", "tial"])
    received: list[str] = []

    with pytest.raises(ProviderError) as caught:
        async for update in client.get_streaming_response(HELLO, ChatOptions()):
            received.append(update.text_delta)

    assert received == ["Par", "tial"]
    assert caught.value.retryable is True
    assert "The server had an error" in str(caught.value)


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with OpenAIChatClient(api_key=API_KEY, model="gpt-test", base_url=f"http://127.0.0.1:{port}/v1") as chat:
        with pytest.raises(ProviderError) as caught:
            await chat.get_response(HELLO, ChatOptions())

    assert caught.value.retryable is True
    assert caught.value.status is None
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)


async def test_an_exhausted_script_answers_500(server: LoopbackOpenAIServer, client: OpenAIChatClient) -> None:
    with pytest.raises(ProviderError, match="script ran out"):
        await client.get_response(HELLO, ChatOptions())


# -- lifecycle ------------------------------------------------------------------------------------------------------


async def test_stopping_a_stream_early_releases_the_connection(
    server: LoopbackOpenAIServer, client: OpenAIChatClient
) -> None:
    server.enqueue_text("abcdef", chunks=list("abcdef"), chunk_delay=0.01).enqueue_text("next")
    stream = client.get_streaming_response(HELLO, ChatOptions())

    first = await anext(stream)
    await stream.aclose()

    assert first.text_delta == "a"
    assert (await client.get_response(HELLO, ChatOptions())).message.text == "next"


async def test_function_replies_see_the_request(server: LoopbackOpenAIServer, client: OpenAIChatClient) -> None:
    server.enqueue_function(lambda body: f"you said {body['messages'][-1]['content']}")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.text == "you said Say hello"


def test_constructor_validates_settings() -> None:
    with pytest.raises(ConfigurationError, match="model"):
        OpenAIChatClient(api_key=API_KEY, model=" ")
    with pytest.raises(ConfigurationError, match="API key"):
        OpenAIChatClient(api_key="", model="gpt-test")
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAIChatClient(api_key=API_KEY, model="gpt-test", timeout=0)


async def test_keyless_compatible_server_is_allowed() -> None:
    with LoopbackOpenAIServer() as open_server:
        open_server.enqueue_text("hi")
        async with OpenAIChatClient(api_key="", model="llama", base_url=open_server.base_url) as chat:
            assert (await chat.get_response(HELLO, ChatOptions())).message.text == "hi"


def test_importing_the_adapter_package_imports_no_sdk() -> None:
    code = "import sys, ironhive.adapters.openai; print('openai' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "False"
