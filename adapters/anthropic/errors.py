"""Translation of anthropic SDK exceptions into ironhive's error tree, in one place."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import anthropic

from ironhive.adapters.provider_errors import (
    http_failure,
    safe_message,
    timed_out,
    unexpected_failure,
    unreachable,
)
from ironhive.adapters.retry_after import retry_after_seconds
from ironhive.domain.errors import ContextOverflowError, ProviderError

# "prompt is too long: 210000 tokens > 200000 maximum", and the request whose input plus max_tokens does not fit:
# "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or ...".
_OVERFLOW_PATTERNS = (
    re.compile(r"prompt is too long:?\s*\d+\s*tokens?\s*>\s*(\d+)", re.IGNORECASE),
    re.compile(r"exceed(?:s|ed)? (?:the )?context limit:?[^>]*>\s*(\d+)", re.IGNORECASE),
    re.compile(r"prompt is too long", re.IGNORECASE),
)
# An ``error`` event inside a stream arrives after HTTP 200; its type says whether the failure is transient.
_TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


def translate_error(
    exc: anthropic.AnthropicError, *, provider: str = "anthropic", secrets: Sequence[str] = ()
) -> ProviderError:
    """Translate an anthropic SDK exception into a ``ProviderError`` (raise it ``from exc``).

    Args:
        exc: What the SDK raised.
        provider: The provider's name, for the message.
        secrets: Strings (the API key) that must never appear in the message.

    Returns:
        ``ContextOverflowError`` when the prompt did not fit the context window, else ``ProviderError`` with the HTTP
        status (``None`` for an error sent inside a stream), whether a retry may succeed and the requested delay.
    """
    if isinstance(exc, anthropic.APITimeoutError):
        return timed_out(provider)
    if isinstance(exc, anthropic.APIConnectionError):
        return unreachable(exc, provider, secrets)
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc, provider, secrets)
    if isinstance(exc, anthropic.APIError):
        message = safe_message(_server_message(exc.body) or exc.message, secrets)
        return ProviderError(f"{provider} sent an answer ironhive cannot read: {message}", provider=provider)
    return unexpected_failure(exc, provider, secrets)


def _status_error(exc: anthropic.APIStatusError, provider: str, secrets: Sequence[str]) -> ProviderError:
    raw_message = _server_message(exc.body) or exc.message
    server_message = safe_message(raw_message, secrets)
    error_type = exc.type or _error_type(exc.body)
    if error_type in (None, "invalid_request_error") and (window := _overflow_window(raw_message)) is not None:
        return ContextOverflowError(
            f"{provider} rejected the prompt as too long for the model's context window: {server_message}",
            window=window or None,
            provider=provider,
        )
    status = exc.status_code
    if status < 400:
        # The SDK raises an SSE ``error`` event with the stream's own status (200): no HTTP failure to report.
        return ProviderError(
            f"{provider} reported an error mid-stream ({error_type or 'unknown'}): {server_message}",
            retryable=error_type in _TRANSIENT_TYPES,
            provider=provider,
        )
    label = f"{status} ({error_type or 'error'})"
    retry_after = retry_after_seconds(exc, anthropic.APIStatusError)
    return http_failure(provider, status, label, server_message, retry_after=retry_after)


def _server_message(body: object) -> str:
    # Anthropic's body is {"type": "error", "error": {"type": ..., "message": ...}}; proxies may send text or HTML.
    if isinstance(body, Mapping):
        error = body.get("error")
        message = error.get("message") if isinstance(error, Mapping) else body.get("message")
        if isinstance(message, str) and message.strip():
            return message
        return ""
    return body if isinstance(body, str) and body.strip() else ""


def _error_type(body: object) -> str | None:
    error = body.get("error") if isinstance(body, Mapping) else None
    kind = error.get("type") if isinstance(error, Mapping) else None
    return kind if isinstance(kind, str) else None


def _overflow_window(server_message: str) -> int | None:
    """The window an overflow message states, 0 for an overflow that states none, ``None`` for no overflow."""
    for pattern in _OVERFLOW_PATTERNS:
        if match := pattern.search(server_message):
            return int(match.group(1)) if match.groups() else 0
    return None


__all__ = ["translate_error"]
