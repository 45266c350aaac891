"""TokenBudgetChatClient: pass-through under budget, the Length notice over it (streaming and not), window sources."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.domain.context.budget import BUDGET_EXHAUSTED_NOTICE, TokenBudgetChatClient
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContextSizeProvider,
    Role,
)

OPTIONS = ChatOptions()


def messages(chars: int) -> list[ChatMessage]:
    return [ChatMessage.of_text(Role.USER, "x" * chars)]


class SizedScriptedClient(ScriptedChatClient):
    def __init__(self, size: int) -> None:
        super().__init__([ScriptStep(text="fine")], repeat_last=True)
        self.size = size

    @property
    def context_size(self) -> int:
        return self.size


async def collect(client: ChatClient, request: Sequence[ChatMessage]) -> list[ChatUpdate]:
    return [update async for update in client.get_streaming_response(request, OPTIONS)]


async def test_under_budget_both_calls_pass_through() -> None:
    inner = ScriptedChatClient([ScriptStep(text="hello there")], repeat_last=True)
    client = TokenBudgetChatClient(inner, window=1000)
    response = await client.get_response(messages(3000), OPTIONS)  # 3 + 4 + 750 = 757 ≤ 800
    assert response.message.text == "hello there" and response.finish_reason == "stop"
    updates = await collect(client, messages(3000))
    assert "".join(update.text_delta for update in updates) == "hello there"
    assert [request.streaming for request in inner.requests] == [False, True]


async def test_over_budget_the_inner_client_is_not_called_non_streaming() -> None:
    inner = ScriptedChatClient([ScriptStep(text="never")], repeat_last=True)
    client = TokenBudgetChatClient(inner, window=1000)
    assert client.token_limit == 800
    response = await client.get_response(messages(3200), OPTIONS)  # 807 > 800
    assert response.finish_reason == "length"
    assert response.message.role is Role.ASSISTANT and response.message.text == BUDGET_EXHAUSTED_NOTICE
    assert inner.requests == []


async def test_over_budget_the_stream_is_one_length_update() -> None:
    inner = ScriptedChatClient([ScriptStep(text="never")], repeat_last=True)
    client = TokenBudgetChatClient(inner, window=1000, threshold=0.5)
    updates = await collect(client, messages(2000))  # 507 > 500
    assert updates == [ChatUpdate(text_delta=BUDGET_EXHAUSTED_NOTICE, finish_reason="length")]
    assert inner.requests == []
    assert BUDGET_EXHAUSTED_NOTICE.startswith("[partial response: token budget exhausted before the assistant")


async def test_the_window_comes_from_a_context_size_provider_and_is_forwarded() -> None:
    inner = SizedScriptedClient(4096)
    client = TokenBudgetChatClient(inner)
    assert client.window == 4096 and client.token_limit == 3276
    assert isinstance(client, ContextSizeProvider) and client.context_size == 4096
    assert (await client.get_response(messages(13_100), OPTIONS)).finish_reason == "length"
    assert (await client.get_response(messages(13_100 - 40), OPTIONS)).message.text == "fine"
    inner.size = 8192  # read on every call
    assert (await client.get_response(messages(13_100), OPTIONS)).message.text == "fine"
    assert TokenBudgetChatClient(inner, window=1000).context_size == 1000


async def test_without_any_window_everything_passes_through() -> None:
    inner = ScriptedChatClient([ScriptStep(text="ok")], repeat_last=True)
    client = TokenBudgetChatClient(inner)
    assert client.window is None and client.token_limit is None
    assert not isinstance(client, ContextSizeProvider)
    assert (await client.get_response(messages(1_000_000), OPTIONS)).message.text == "ok"
    assert "".join(u.text_delta for u in await collect(client, messages(1_000_000))) == "ok"
    assert isinstance(client, ChatClient)


class ClosingStream:
    def __init__(self) -> None:
        self.closed = False

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        raise AssertionError("only streaming is used here")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        try:
            for piece in ("a", "b", "c"):
                yield ChatUpdate(text_delta=piece)
        finally:
            self.closed = True


async def test_stopping_early_closes_the_inner_stream() -> None:
    inner = ClosingStream()
    client = TokenBudgetChatClient(inner)
    stream = client.get_streaming_response(messages(10), OPTIONS)
    first = await anext(stream)
    assert first.text_delta == "a"
    await stream.aclose()  # type: ignore[attr-defined]  # the decorator's stream is an async generator
    assert inner.closed


@pytest.mark.parametrize(("window", "threshold"), [(0, 0.8), (100, 0.0), (100, 1.5)])
def test_invalid_settings_are_refused(window: int, threshold: float) -> None:
    with pytest.raises(ValueError):
        TokenBudgetChatClient(ScriptedChatClient(), window=window, threshold=threshold)
