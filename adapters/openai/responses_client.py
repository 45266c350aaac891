"""OpenAIResponsesChatClient: the ChatClient port over OpenAI's Responses API (nothing stored on OpenAI's side)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

import openai

from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.adapters.openai.errors import translate_error
from ironhive.adapters.openai.responses_mapping import (
    ResponsesStreamAccumulator,
    build_responses_request,
    to_chat_response,
)
from ironhive.ports.chat import ChatMessage, ChatOptions, ChatResponse, ChatUpdate


class OpenAIResponsesChatClient(OpenAIChatClient):
    """A ``ChatClient`` over ``POST /responses`` with ``store: false``: the conversation is sent whole each time, and
    reasoning models' encrypted reasoning items come back as thinking blocks' opaque state, which later requests (the
    next tool round, the next turn, a resumed session) send back to the same provider.

    Takes the same arguments as :class:`OpenAIChatClient` (``use_max_tokens_field`` has no meaning here).
    """

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer ``messages`` in one piece.

        Raises:
            ProviderError: The request failed; ``ContextOverflowError`` when it did not fit the window.
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = build_responses_request(messages, options, default_model=self.model, provider=self.provider_name)
        try:
            response = await self._client().responses.create(**request)
        except openai.OpenAIError as exc:
            raise translate_error(exc, provider=self.provider_name, secrets=(self._api_key,)) from exc
        return to_chat_response(response, self._id_factory, provider=self.provider_name)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatUpdate, None]:
        """Answer ``messages`` as a stream of updates; tool calls arrive complete, usage and finish reason last.

        Raises:
            ProviderError: The request failed, when it was sent or mid-stream (``error``/``response.failed``).
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = build_responses_request(messages, options, default_model=self.model, provider=self.provider_name)
        accumulator = ResponsesStreamAccumulator(id_factory=self._id_factory, provider=self.provider_name)
        try:
            stream = await self._client().responses.create(**request, stream=True)
            async with stream:
                async for event in stream:
                    for update in accumulator.feed(event):
                        yield update
        except openai.OpenAIError as exc:
            raise translate_error(exc, provider=self.provider_name, secrets=(self._api_key,)) from exc


__all__ = ["OpenAIResponsesChatClient"]
