"""AnthropicChatClient: the ChatClient port over Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from functools import partial

import anthropic

from ironhive.adapters.anthropic.errors import translate_error
from ironhive.adapters.anthropic.mapping import MessagesRequest, build_request, to_anthropic_messages
from ironhive.adapters.anthropic.reasoning import PROVIDER as _PROVIDER
from ironhive.adapters.anthropic.responses import StreamAccumulator, to_chat_response
from ironhive.adapters.closing import AsyncClosing
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.tool_calls import new_call_id
from ironhive.ports.chat import ChatMessage, ChatOptions, ChatResponse, ChatUpdate

# The SDK refuses to send a request without credentials; a keyless proxy at ``base_url`` gets this instead.
_NO_KEY = "no-key"


def _without_version(base_url: str) -> str:
    trimmed = base_url.rstrip("/")
    return trimmed.removesuffix("/v1") if trimmed.endswith("/v1") else trimmed


class AnthropicChatClient(AsyncClosing):
    """A ``ChatClient`` that talks to Anthropic's Messages API through the anthropic SDK.

    The SDK client is built on first use, so constructing this object does no I/O. The SDK's own retries are off:
    ironhive decides about retrying from the ``ProviderError`` it raises. Signed and redacted thinking arrive as
    thinking parts carrying Anthropic's state, stored with the session, and go back from there, as the API requires in
    a tool round while thinking is on (see ``ironhive.adapters.anthropic.mapping.build_request``).

    Args:
        api_key: The API key; may be empty only when ``base_url`` points at a server that needs none.
        model: The model asked for unless ``ChatOptions.model`` names another.
        base_url: The API's base URL; the SDK adds ``/v1`` itself, so a trailing ``/v1`` is dropped rather than
            doubled. ``None`` means the SDK's default (``ANTHROPIC_BASE_URL``, else Anthropic).
        timeout: Seconds one request may take.
        id_factory: Makes ids for tool calls that arrive without one.
        max_output_tokens_default: ``max_tokens`` when ``ChatOptions.max_output_tokens`` is unset; the API requires
            a value on every request.

    Raises:
        ConfigurationError: The model is empty, the timeout or default output limit not positive, or the key missing
            for Anthropic itself.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout: float = 600.0,
        id_factory: Callable[[], str] | None = None,
        max_output_tokens_default: int = 4096,
    ) -> None:
        if not model.strip():
            raise ConfigurationError(f"{_PROVIDER}: a model name is required")
        if timeout <= 0:
            raise ConfigurationError(f"{_PROVIDER}: the timeout must be positive, not {timeout}")
        if max_output_tokens_default <= 0:
            raise ConfigurationError(
                f"{_PROVIDER}: the default output limit must be positive, not {max_output_tokens_default}"
            )
        if not api_key and base_url is None:
            raise ConfigurationError(f"{_PROVIDER}: an API key is required")
        self._api_key = api_key
        self._model = model
        self._base_url = _without_version(base_url) if base_url is not None else None
        self._timeout = timeout
        self._id_factory = id_factory or partial(new_call_id, "toolu")
        self._max_output_tokens_default = max_output_tokens_default
        self._sdk: anthropic.AsyncAnthropic | None = None

    @property
    def model(self) -> str:
        """The default model of this client."""
        return self._model

    @property
    def provider_name(self) -> str:
        """The provider's name as used in errors."""
        return _PROVIDER

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer ``messages`` in one piece.

        Raises:
            ProviderError: The request failed; ``ContextOverflowError`` when the prompt did not fit the window.
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = self._request(messages, options)
        try:
            message = await self._client().messages.create(**request)
        except anthropic.AnthropicError as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        return to_chat_response(message, self._id_factory)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatUpdate, None]:
        """Answer ``messages`` as a stream of updates; each tool call arrives complete, usage with the finish reason.

        ``aclose()`` on the returned generator ends the request early and releases its connection.

        Raises:
            ProviderError: The request failed, when it was sent or mid-stream (an SSE ``error`` event).
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = self._request(messages, options)
        accumulator = StreamAccumulator(self._id_factory)
        try:
            stream = await self._client().messages.create(**request, stream=True)
            async with stream:
                async for event in stream:
                    for update in accumulator.feed(event):
                        yield update
        except anthropic.AnthropicError as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        for update in accumulator.finish():
            yield update

    async def count_input_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """Count ``messages`` with the API's free count endpoint (``messages.count_tokens``; no tool definitions).

        Raises:
            ProviderError: The request failed.
        """
        system, turns = to_anthropic_messages(messages)
        try:
            sdk = self._client()
            if system:
                counted = await sdk.messages.count_tokens(model=self._model, system=system, messages=turns)
            else:
                counted = await sdk.messages.count_tokens(model=self._model, messages=turns)
        except anthropic.AnthropicError as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        return counted.input_tokens

    async def aclose(self) -> None:
        """Close the SDK client (and its connection pool) if it was built."""
        if self._sdk is not None:
            sdk, self._sdk = self._sdk, None
            await sdk.close()

    def _request(self, messages: Sequence[ChatMessage], options: ChatOptions) -> MessagesRequest:
        return build_request(
            messages,
            options,
            default_model=self._model,
            default_max_tokens=self._max_output_tokens_default,
        )

    def _client(self) -> anthropic.AsyncAnthropic:
        if self._sdk is None:
            self._sdk = anthropic.AsyncAnthropic(
                api_key=self._api_key or _NO_KEY, base_url=self._base_url, timeout=self._timeout, max_retries=0
            )
        return self._sdk


__all__ = ["AnthropicChatClient"]
