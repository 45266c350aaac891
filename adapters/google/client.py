"""GoogleGenAIChatClient: the ChatClient port over the Gemini API through the google-genai SDK."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import cast
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from google import genai
from google.genai import types

from ironhive.adapters.closing import AsyncClosing
from ironhive.adapters.google.errors import SDK_ERRORS, translate_error
from ironhive.adapters.google.mapping import (
    StreamAccumulator,
    build_request,
    to_chat_response,
    to_gemini_contents,
)
from ironhive.adapters.google.reasoning import PROVIDER
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.tool_calls import new_call_id
from ironhive.ports.chat import ChatMessage, ChatOptions, ChatResponse, ChatUpdate

DEFAULT_API_VERSION = "v1beta"
"""The Gemini API version asked for unless the base URL names one (the SDK itself defaults to ``v1``, which lacks
some of what ironhive uses, such as thought summaries)."""

_PROVIDER = PROVIDER
# The SDK reads streamed lines of any length but sizes its own sessions' buffer like this; so does this client.
_READ_BUFFER = 2**22
_VERSION_SEGMENT = re.compile(r"^v\d+(?:(?:alpha|beta)\d*)?$")


def split_base_url(base_url: str) -> tuple[str, str]:
    """Split a Gemini base URL into the SDK's base URL and the API version.

    ``https://generativelanguage.googleapis.com/v1beta/`` (the form IronHive's settings use) and the bare host both
    work: the SDK appends the version itself, so one found at the end of the URL is moved out of it.

    Returns:
        ``(base_url, api_version)``; the version is ``DEFAULT_API_VERSION`` when the URL names none.
    """
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    head, _, last = path.rpartition("/")
    if _VERSION_SEGMENT.match(last):
        return urlunsplit(parts._replace(path=head + "/")), last
    return urlunsplit(parts._replace(path=path + "/")), DEFAULT_API_VERSION


class GoogleGenAIChatClient(AsyncClosing):
    """A ``ChatClient`` that talks to Google's Gemini API through the official google-genai SDK.

    The SDK client is built on first use, so constructing this object does no I/O. The SDK's retries, automatic
    continuation and automatic function calling are off: ironhive runs tools and decides about retrying from the
    ``ProviderError`` it raises.

    Gemini may send function calls without ids; they get ids from ``id_factory``. A call's own Gemini id and the
    thought signature that must go back with it travel in the call's provider state, stored with the session (Gemini 3
    rejects a turn whose calls lost their signature; calls without one of this model's go back with the documented
    dummy signature).

    Args:
        api_key: The Gemini API key.
        model: The model asked for unless ``ChatOptions.model`` names another (``gemini-2.5-flash``).
        base_url: The API's base URL, with or without the version (``.../v1beta/``); ``None`` means Google's.
        timeout: Seconds one request may take.
        id_factory: Makes ids for function calls that arrive without one.

    Raises:
        ConfigurationError: The key or model is empty, or the timeout not positive.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout: float = 600.0,
        id_factory: Callable[[], str] | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigurationError(f"{_PROVIDER}: a model name is required")
        if timeout <= 0:
            raise ConfigurationError(f"{_PROVIDER}: the timeout must be positive, not {timeout}")
        if not api_key.strip():
            raise ConfigurationError(f"{_PROVIDER}: an API key is required")
        self._api_key = api_key.strip()
        self._model = model
        self._base_url = base_url
        self._timeout = timeout
        self._id_factory = id_factory or new_call_id
        self._sdk: genai.Client | None = None
        self._session: aiohttp.ClientSession | None = None

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
            ProviderError: The request failed; ``ContextOverflowError`` when it did not fit the window.
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = build_request(messages, options, default_model=self._model)
        try:
            response = await self._client().aio.models.generate_content(
                model=request.model, contents=request.contents, config=request.config
            )
        except SDK_ERRORS as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        return to_chat_response(response, self._id_factory, request.model)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatUpdate, None]:
        """Answer ``messages`` as a stream of updates; function calls arrive complete, usage last.

        ``aclose()`` on the returned generator ends the request early and releases its connection.

        Raises:
            ProviderError: The request failed, when it was sent or mid-stream.
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = build_request(messages, options, default_model=self._model)
        accumulator = StreamAccumulator(self._id_factory, request.model)
        stream: AsyncGenerator[types.GenerateContentResponse, None] | None = None
        try:
            # The SDK's stream is an async generator, though typed as an iterator; closing it releases the response.
            stream = cast(
                AsyncGenerator[types.GenerateContentResponse, None],
                await self._client().aio.models.generate_content_stream(
                    model=request.model, contents=request.contents, config=request.config
                ),
            )
            async for chunk in stream:
                for update in accumulator.feed(chunk):
                    yield update
        except SDK_ERRORS as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        finally:
            if stream is not None:
                await stream.aclose()
        for update in accumulator.finish():
            yield update

    async def count_input_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """Count ``messages`` with the API's free ``countTokens`` (no tool definitions).

        The Gemini API's count takes no system instruction, so it is counted as the first user content.

        Raises:
            ProviderError: The request failed.
        """
        system, contents = to_gemini_contents(messages, self._model)
        if system:
            contents = [types.Content(role="user", parts=[types.Part(text=system)]), *contents]
        try:
            counted = await self._client().aio.models.count_tokens(model=self._model, contents=contents)
        except SDK_ERRORS as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        return counted.total_tokens or 0

    async def aclose(self) -> None:
        """Close the SDK client (and its connection pools) if it was built."""
        if self._sdk is not None:
            sdk, self._sdk = self._sdk, None
            await sdk.aio.aclose()
            sdk.close()
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def _client(self) -> genai.Client:
        """The SDK client, built on first use (inside the event loop: its aiohttp session belongs to that loop)."""
        if self._sdk is None:
            base_url, api_version = split_base_url(self._base_url) if self._base_url else (None, DEFAULT_API_VERSION)
            # The SDK would otherwise make its own session from a subclass of aiohttp.ClientSession, which aiohttp
            # deprecates with a warning on every first request; owning the session also lets aclose() close it.
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self._timeout), trust_env=True, read_bufsize=_READ_BUFFER
            )
            options = types.HttpOptions(
                base_url=base_url,
                api_version=api_version,
                timeout=max(1, round(self._timeout * 1000)),  # the SDK counts milliseconds
                retry_options=types.HttpRetryOptions(attempts=1),  # one attempt: no retries
                aiohttp_client=self._session,
            )
            # vertexai=False keeps GOOGLE_GENAI_USE_VERTEXAI in the environment from redirecting the client.
            self._sdk = genai.Client(api_key=self._api_key, vertexai=False, http_options=options)
        return self._sdk


__all__ = ["DEFAULT_API_VERSION", "GoogleGenAIChatClient", "split_base_url"]
