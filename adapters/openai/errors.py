"""Translation of openai SDK exceptions into ironhive's error tree, in one place."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import openai

from ironhive.adapters.provider_errors import (
    http_failure,
    safe_message,
    timed_out,
    unexpected_failure,
    unreachable,
)
from ironhive.adapters.retry_after import retry_after_seconds
from ironhive.domain.errors import ContextOverflowError, ProviderError

_OVERFLOW_CODES = frozenset({"context_length_exceeded"})
# llama.cpp's server reports an overflow with this error type and states the window as ``n_ctx``.
_OVERFLOW_TYPES = frozenset({"exceed_context_size_error"})
_WINDOW_PATTERN = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)
# Errors sent inside a stream carry no HTTP status; these types and codes say the failure is transient.
_TRANSIENT_STREAM_ERRORS = frozenset({"server_error", "rate_limit_exceeded", "overloaded_error", "timeout"})


def translate_error(exc: openai.OpenAIError, *, provider: str, secrets: Sequence[str] = ()) -> ProviderError:
    """Translate an openai SDK exception into a ``ProviderError`` (raise it ``from exc``).

    Args:
        exc: What the SDK raised.
        provider: The provider's name, for the message.
        secrets: Strings (the API key) that must never appear in the message.

    Returns:
        ``ContextOverflowError`` when the request did not fit the context window, else ``ProviderError`` with the
        HTTP status and whether a retry may succeed.
    """
    if isinstance(exc, openai.APITimeoutError):
        return timed_out(provider)
    if isinstance(exc, openai.APIConnectionError):
        return unreachable(exc, provider, secrets)
    if isinstance(exc, openai.APIError):
        server_message = safe_message(_server_message(exc), secrets)
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        if _is_overflow(exc, server_message):
            return ContextOverflowError(
                f"{provider} rejected the request as too long for the model's context window "
                f"(HTTP {status or 400}): {server_message}",
                window=_window(exc.body, server_message),
                provider=provider,
            )
        if status is not None:
            retry_after = retry_after_seconds(exc, openai.APIStatusError)
            return http_failure(provider, status, str(status), server_message, retry_after=retry_after)
        transient = bool({exc.type, exc.code} & _TRANSIENT_STREAM_ERRORS)
        return ProviderError(f"{provider} reported an error: {server_message}", retryable=transient, provider=provider)
    return unexpected_failure(exc, provider, secrets)


def _server_message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message.strip():
            return message
    if isinstance(body, str) and body.strip():
        return body
    return exc.message


def _is_overflow(exc: openai.APIError, server_message: str) -> bool:
    return (
        exc.code in _OVERFLOW_CODES or exc.type in _OVERFLOW_TYPES or _WINDOW_PATTERN.search(server_message) is not None
    )


def _window(body: object, server_message: str) -> int | None:
    if isinstance(body, Mapping):
        n_ctx = body.get("n_ctx")
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
            return n_ctx
    match = _WINDOW_PATTERN.search(server_message)
    return int(match.group(1)) if match else None


__all__ = ["translate_error"]
