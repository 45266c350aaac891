"""TokenBudgetChatClient: a ChatClient decorator that refuses requests too big for the model's window."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from typing import Protocol, overload

from ironhive.domain.context.tokens import DEFAULT_COUNTER, MessageTokenCache, TokenCounter
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContextSizeProvider,
    Role,
    ToolSpec,
)

BUDGET_EXHAUSTED_NOTICE = (
    "[partial response: token budget exhausted before the assistant could finish — the conversation history reached "
    "the model's context window. Please shorten your message or start a new conversation.]"
)


class SizedChatClient(ChatClient, ContextSizeProvider, Protocol):
    """A chat client that also knows its context window."""


class TokenBudgetChatClient:
    """The hard backstop against per-request overflow (inventory §D.7, with the readme-era defects fixed).

    Over ``floor(window × threshold)`` estimated tokens the inner client is not called: the answer is the notice
    ``BUDGET_EXHAUSTED_NOTICE`` with finish reason ``"length"``. Both the streaming and the non-streaming call are
    guarded (the original guarded only streaming). The window is the one given, else the inner client's
    ``context_size``; when neither is known every request passes through, rather than holding a remote 200k-window
    model to a fixed 4096 tokens as the original did.

    When the window is known the decorator is itself a ``ContextSizeProvider`` (constructing one returns the
    ``SizedTokenBudgetChatClient`` subclass), so code above it still finds the window.
    """

    _inner: ChatClient
    _window: int | None
    _threshold: float
    _counter: TokenCounter
    _tokens: MessageTokenCache

    @overload
    def __new__(
        cls, inner: ChatClient, *, window: int, threshold: float = ..., counter: TokenCounter = ...
    ) -> SizedTokenBudgetChatClient: ...

    @overload
    def __new__(
        cls, inner: SizedChatClient, *, window: None = None, threshold: float = ..., counter: TokenCounter = ...
    ) -> SizedTokenBudgetChatClient: ...

    @overload
    def __new__(
        cls, inner: ChatClient, *, window: int | None = None, threshold: float = ..., counter: TokenCounter = ...
    ) -> TokenBudgetChatClient: ...

    def __new__(
        cls,
        inner: ChatClient,
        *,
        window: int | None = None,
        threshold: float = 0.8,
        counter: TokenCounter = DEFAULT_COUNTER,
    ) -> TokenBudgetChatClient:
        """Wrap a chat client.

        Args:
            inner: The client that answers requests within the budget.
            window: The model's context window; ``None`` asks the inner client.
            threshold: The share of the window a request may fill (0 < threshold ≤ 1).
            counter: The token estimate.

        Raises:
            ValueError: ``window`` is not positive or ``threshold`` is out of range.
        """
        if window is not None and window < 1:
            raise ValueError(f"window must be a positive number of tokens, not {window}.")
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], not {threshold}.")
        # runtime_checkable protocols look members up on the class (statically since Python 3.12), so only a class
        # that has ``context_size`` can report one; pick it when there is a window to report. Everything is set here
        # rather than in __init__ so that type checkers see the subclass as the constructor's result.
        if cls is TokenBudgetChatClient and (window is not None or isinstance(inner, ContextSizeProvider)):
            cls = SizedTokenBudgetChatClient
        client = super().__new__(cls)
        client._inner = inner
        client._window = window
        client._threshold = threshold
        client._counter = counter
        # A real tokenizer costs more than chars ÷ 4: count each (immutable) message of the history once.
        client._tokens = MessageTokenCache(counter)
        return client

    @property
    def inner(self) -> ChatClient:
        """The wrapped client."""
        return self._inner

    @property
    def window(self) -> int | None:
        """The window guarded: the given one, else the inner client's, else ``None`` (no guard)."""
        if self._window is not None:
            return self._window
        if isinstance(self._inner, ContextSizeProvider):
            return self._inner.context_size
        return None

    @property
    def token_limit(self) -> int | None:
        """The largest request estimate let through, ``floor(window × threshold)``; ``None`` when unguarded."""
        window = self.window
        return None if window is None else math.floor(window * self._threshold)

    def exceeds_budget(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> bool:
        """Whether ``messages`` and the definitions of ``tools`` sent with them are over the budget (never, when the
        window is unknown)."""
        limit = self.token_limit
        tokens = self._tokens
        if limit is None or tokens.bound_all(messages) + tokens.bound_tools(tools) <= limit:
            return False  # settled by the cheap bound: nothing counted, no tokenizer loaded
        return tokens.count_all(messages) + tokens.count_tools(tools) > limit

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer through the inner client, or with the notice when the request is over the budget."""
        if self.exceeds_budget(messages, options.tools or ()):
            notice = ChatMessage.of_text(Role.ASSISTANT, BUDGET_EXHAUSTED_NOTICE)
            return ChatResponse(message=notice, finish_reason="length")
        return await self._inner.get_response(messages, options)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        """Stream through the inner client, or yield the notice alone when the request is over the budget."""
        if self.exceeds_budget(messages, options.tools or ()):
            yield ChatUpdate(text_delta=BUDGET_EXHAUSTED_NOTICE, finish_reason="length")
            return
        stream = self._inner.get_streaming_response(messages, options)
        try:
            async for update in stream:
                yield update
        finally:
            # A consumer that stops early closes this generator; close the inner stream too (its connection).
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()


class SizedTokenBudgetChatClient(TokenBudgetChatClient):
    """A TokenBudgetChatClient whose window is known; it reports it as ``context_size``."""

    @property
    def context_size(self) -> int:
        """The guarded model's context window."""
        window = self.window
        if window is None:  # pragma: no cover - this class is only chosen when a window is known
            raise AttributeError("context_size")
        return window
