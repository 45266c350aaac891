"""OpenAIResponsesChatClient through the real openai SDK against a loopback server speaking the Responses SSE format."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator

import pytest

from ironhive.adapters.openai.responses_client import OpenAIResponsesChatClient
from ironhive.domain.errors import ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from tests.support.openai_server import LoopbackOpenAIServer

API_KEY = "sk-loopback-secret-key-0123456789"
HELLO = [ChatMessage.of_text(Role.USER, "Say hello")]
TOOL = ToolSpec(name="read_file", description="Read a file", parameters={"type": "object", "properties": {}})


@pytest.fixture
def server() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer(api_key=API_KEY) as running:
        yield running


def make_client(server: LoopbackOpenAIServer, model: str = "gpt-5-mini") -> OpenAIResponsesChatClient:
    counter = itertools.count(1)
    return OpenAIResponsesChatClient(
        api_key=API_KEY, model=model, base_url=server.base_url, id_factory=lambda: f"generated_{next(counter)}"
    )


@pytest.fixture
async def client(server: LoopbackOpenAIServer) -> AsyncIterator[OpenAIResponsesChatClient]:
    async with make_client(server) as chat:
        yield chat


async def collect(
    client: OpenAIResponsesChatClient, messages: list[ChatMessage] = HELLO, options: ChatOptions | None = None
) -> list[ChatUpdate]:
    return [update async for update in client.get_streaming_response(messages, options or ChatOptions())]


async def test_it_is_a_chat_client(client: OpenAIResponsesChatClient) -> None:
    assert isinstance(client, ChatClient)


async def test_streamed_text_then_finish_with_usage(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_text("Hello there.", chunks=["Hello ", "there."], usage=(12, 3))
    updates = await collect(client)
    assert [u.text_delta for u in updates if u.text_delta] == ["Hello ", "there."]
    assert updates[-1].finish_reason == "stop" and updates[-1].usage == Usage(
        input_tokens=12, output_tokens=3, cached_input_tokens=0, reasoning_tokens=0
    )
    (request,) = server.requests
    assert request["stream"] is True and request["store"] is False
    assert request["include"] == ["reasoning.encrypted_content"] and request["reasoning"] == {"summary": "auto"}
    assert request["input"] == [{"type": "message", "role": "user", "content": "Say hello"}]


async def test_reasoning_summary_streams_as_thinking_and_closes_a_block_with_the_encrypted_item(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_tool_calls([("call_1", "read_file", {"path": "a.txt"})], reasoning=["Need ", "the file."])
    updates = await collect(client, options=ChatOptions(tools=(TOOL,)))
    assert "".join(u.thinking_delta for u in updates) == "Need the file."
    (block,) = [u.thinking_block for u in updates if u.thinking_block is not None]
    assert block.text == "Need the file." and block.opaque is not None
    assert block.opaque.provider == "openai" and block.opaque.model == "gpt-5-mini"
    assert json.loads(block.opaque.data) == {
        "id": "rs_loopback000001",
        "encrypted_content": "gAAAAB-loopback-encrypted-000001",
    }
    (call,) = [c for u in updates for c in u.tool_calls]
    assert (call.call_id, call.name, call.arguments) == ("call_1", "read_file", {"path": "a.txt"})
    assert updates[-1].finish_reason == "tool_calls"


async def test_the_next_round_sends_reasoning_call_and_output_back_in_order(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_tool_calls([("call_1", "read_file", {"path": "a.txt"})], reasoning="Need the file.")
    server.enqueue_text("It says hi.")
    first = await collect(client, options=ChatOptions(tools=(TOOL,)))
    block = next(u.thinking_block for u in first if u.thinking_block is not None)
    call = next(c for u in first for c in u.tool_calls)
    history = [
        *HELLO,
        ChatMessage(role=Role.ASSISTANT, parts=(block, call)),
        ChatMessage(
            role=Role.TOOL, parts=(ToolResultPart(call_id="call_1", name="read_file", result="hi", success=True),)
        ),
    ]
    await collect(client, history, ChatOptions(tools=(TOOL,)))
    second = server.requests[1]["input"]
    assert second[1] == {
        "type": "reasoning",
        "id": "rs_loopback000001",
        "summary": [{"type": "summary_text", "text": "Need the file."}],
        "encrypted_content": "gAAAAB-loopback-encrypted-000001",
    }
    assert second[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": '{"path": "a.txt"}',
    }
    assert second[3] == {"type": "function_call_output", "call_id": "call_1", "output": "hi"}


async def test_another_providers_thinking_is_never_sent(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_text("ok")
    foreign = ThinkingPart(text="hmm", opaque=OpaqueState(provider="anthropic", data="sig"))
    history = [*HELLO, ChatMessage(role=Role.ASSISTANT, parts=(foreign, TextPart(text="hi"))), *HELLO]
    await collect(client, history)
    assert [item.get("type") for item in server.requests[0]["input"]] == ["message", "message", "message"]


async def test_whole_response_keeps_reasoning_text_and_calls(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_tool_calls([(None, "read_file", "{bad")], reasoning="Think.", usage=(20, 7))
    response = await client.get_response(HELLO, ChatOptions(tools=(TOOL,)))
    thinking, call = response.message.parts
    assert isinstance(thinking, ThinkingPart) and thinking.text == "Think." and thinking.opaque is not None
    assert isinstance(call, ToolCallPart) and call.arguments is None and call.parse_error
    assert response.finish_reason == "tool_calls" and response.usage == Usage(
        input_tokens=20, output_tokens=7, cached_input_tokens=0, reasoning_tokens=0
    )


async def test_cut_at_max_output_tokens_is_length(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_text("Partial", finish_reason="length", usage=(5, 16))
    server.enqueue_text("Partial", finish_reason="length")
    updates = await collect(client, options=ChatOptions(max_output_tokens=16))
    assert updates[-1].finish_reason == "length"
    assert server.requests[0]["max_output_tokens"] == 16
    assert (await client.get_response(HELLO, ChatOptions())).finish_reason == "length"


async def test_per_turn_options_map_onto_the_request(server: LoopbackOpenAIServer) -> None:
    server.enqueue_text("a").enqueue_text("b")
    async with make_client(server, model="gpt-4.1") as plain:
        await collect(plain, options=ChatOptions(temperature=0.2, tools=(TOOL,), tool_mode="require:read_file"))
        await collect(plain, options=ChatOptions(temperature=0.2, reasoning_effort="extra_high", tool_mode="none"))
    first, second = server.requests
    assert first["temperature"] == 0.2 and "reasoning" not in first and "include" not in first
    assert first["tool_choice"] == {"type": "function", "name": "read_file"}
    assert first["tools"] == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file",
            "parameters": TOOL.parameters,
            "strict": False,
        }
    ]
    assert second["reasoning"] == {"summary": "auto", "effort": "xhigh"} and "tool_choice" not in second


async def test_reasoning_models_get_no_temperature(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_text("a")
    await collect(
        client, options=ChatOptions(temperature=0.5, reasoning_effort="low", tools=(TOOL,), tool_mode="require_any")
    )
    (request,) = server.requests
    assert "temperature" not in request and request["reasoning"]["effort"] == "low"
    assert request["tool_choice"] == "required"


async def test_rate_limit_is_retryable_with_retry_after(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_rate_limit(7)
    with pytest.raises(ProviderError) as caught:
        await collect(client)
    assert caught.value.retryable and caught.value.status == 429 and caught.value.retry_after == 7


async def test_auth_error_is_not_retryable_and_hides_the_key(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_auth_error()
    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())
    assert not caught.value.retryable and API_KEY not in str(caught.value)


async def test_context_overflow(server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient) -> None:
    server.enqueue_context_length_exceeded(window=8192)
    with pytest.raises(ContextOverflowError) as caught:
        await collect(client)
    assert caught.value.window == 8192


async def test_a_failed_stream_is_retryable_after_the_text_before_it(
    server: LoopbackOpenAIServer, client: OpenAIResponsesChatClient
) -> None:
    server.enqueue_stream_error("The server had an error", before=["Hel", "lo"])
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        async for update in client.get_streaming_response(HELLO, ChatOptions()):
            seen.append(update.text_delta)
    assert "".join(seen) == "Hello" and caught.value.retryable and "The server had an error" in str(caught.value)
