"""The Anthropic and Gemini count endpoints through the real SDKs against the loopback servers speaking their APIs:
the request each sends, its answer, and its failure as a ProviderError (the context manager then keeps its estimate)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ironhive.adapters.anthropic.client import AnthropicChatClient
from ironhive.adapters.google.client import GoogleGenAIChatClient
from ironhive.domain.context.tokens import ProviderTokenCounter
from ironhive.domain.errors import ProviderError
from ironhive.ports.chat import ChatMessage, Role
from tests.support.anthropic_server import LoopbackAnthropicServer
from tests.support.gemini_server import LoopbackGeminiServer

API_KEY = "sk-ant-loopback-secret-key-0123456789"
CONVERSATION = [
    ChatMessage.of_text(Role.SYSTEM, "You are terse."),
    ChatMessage.of_text(Role.USER, "上下文窗口" * 50),
    ChatMessage.of_text(Role.ASSISTANT, "ok"),
    ChatMessage.of_text(Role.USER, "Again?"),
]


@pytest.fixture
def server() -> Iterator[LoopbackAnthropicServer]:
    with LoopbackAnthropicServer(api_key=API_KEY) as running:
        yield running


async def test_anthropic_counts_a_conversation_with_its_count_endpoint(server: LoopbackAnthropicServer) -> None:
    server.count_tokens = lambda body: 1234
    async with AnthropicChatClient(api_key=API_KEY, model="claude-sonnet-4-5", base_url=server.base_url) as client:
        assert isinstance(client, ProviderTokenCounter)
        assert await client.count_input_tokens(CONVERSATION) == 1234
    (body,) = server.count_requests
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"][0]["text"] == "You are terse."
    assert [message["role"] for message in body["messages"]] == ["user", "assistant", "user"]
    assert "tools" not in body and "max_tokens" not in body
    assert server.requests == []  # no message was created


async def test_a_refused_count_is_a_provider_error_without_the_key(server: LoopbackAnthropicServer) -> None:
    async with AnthropicChatClient(
        api_key="sk-ant-wrong-key-000000000000", base_url=server.base_url, model="c"
    ) as client:
        with pytest.raises(ProviderError) as raised:
            await client.count_input_tokens(CONVERSATION)
    assert raised.value.status == 401 and "sk-ant-wrong" not in str(raised.value)


GEMINI_KEY = "AIzaLoopbackKey0123456789"


async def test_gemini_counts_a_conversation_with_count_tokens_the_system_text_first() -> None:
    with LoopbackGeminiServer(api_key=GEMINI_KEY) as server:
        server.count_tokens = lambda body: 987
        async with GoogleGenAIChatClient(
            api_key=GEMINI_KEY, model="gemini-2.5-flash", base_url=server.base_url
        ) as client:
            assert isinstance(client, ProviderTokenCounter)
            assert await client.count_input_tokens(CONVERSATION) == 987
        (body,) = server.count_requests
        assert server.requests == []
    contents = body["contents"]
    assert [content["role"] for content in contents] == ["user", "user", "model", "user"]
    assert contents[0]["parts"][0]["text"] == "You are terse."
    assert contents[1]["parts"][0]["text"] == "上下文窗口" * 50


async def test_a_refused_gemini_count_is_a_provider_error() -> None:
    with LoopbackGeminiServer(api_key=GEMINI_KEY) as server:
        async with GoogleGenAIChatClient(
            api_key="AIzaWrong", model="gemini-2.5-flash", base_url=server.base_url
        ) as client:
            with pytest.raises(ProviderError) as raised:
                await client.count_input_tokens(CONVERSATION)
    assert raised.value.status in (400, 401, 403) and "AIzaWrong" not in str(raised.value)
