"""UsageCalibratingChatClient: learns the session's token correction from the prompt tokens the provider reports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from ironhive.domain.context.tokens import CalibratedCounter, MessageTokenCache, count_tools
from ironhive.ports.chat import ChatClient, ChatMessage, ChatOptions, ChatResponse, ChatUpdate, Usage


class UsageCalibratingChatClient:
    """A ChatClient decorator that compares each request's uncorrected estimate with the prompt tokens the provider
    reports for it and sets the session's correction factor from them: reported − tool definitions ÷ messages.

    It wraps the client whose tokenizer the counter stands for (the selected provider's), so that a fallback
    provider's different tokenizer never teaches the selected model's correction.
    """

    def __init__(self, inner: ChatClient, counter: CalibratedCounter) -> None:
        """Wrap a chat client.

        Args:
            inner: The client whose reported usage is learned from.
            counter: The corrected counter whose calibration learns.
        """
        self._inner = inner
        self._counter = counter
        self._tokens = MessageTokenCache(counter.base)

    @property
    def inner(self) -> ChatClient:
        """The wrapped client."""
        return self._inner

    def _learn(self, messages: Sequence[ChatMessage], options: ChatOptions, usage: Usage | None) -> None:
        # The correction is learned for the messages, the part compaction counts: the tool definitions (as much as
        # a few thousand tokens of English JSON, which every estimate counts well) are taken off the report as
        # estimated, or they would dilute the ratio of, say, a CJK conversation towards 1.
        # The request is counted only when the factor is next needed: a run whose every decision the cheap bounds
        # settle never loads the tokenizer just to learn.
        if usage is not None and usage.input_tokens is not None:
            reported, sent, specs = usage.input_tokens, tuple(messages), tuple(options.tools or ())

            def observation() -> tuple[int, int]:
                return self._tokens.count_all(sent), reported - count_tools(specs, self._counter.base)

            self._counter.calibration.observe_later(observation)

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer through the inner client and learn from the usage it reports."""
        response = await self._inner.get_response(messages, options)
        self._learn(messages, options, response.usage)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        """Stream through the inner client and learn from the usage its updates report."""
        stream = self._inner.get_streaming_response(messages, options)
        try:
            async for update in stream:
                self._learn(messages, options, update.usage)
                yield update
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
