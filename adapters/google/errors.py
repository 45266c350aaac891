"""Translation of google-genai SDK exceptions into ironhive's error tree, in one place."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import aiohttp
from google.genai import errors as genai_errors

from ironhive.adapters.provider_errors import (
    http_failure,
    is_retryable_status,
    safe_message,
    timed_out,
    unexpected_failure,
    unreachable,
)
from ironhive.adapters.retry_after import retry_after_seconds
from ironhive.domain.errors import ContextOverflowError, ProviderError

SDK_ERRORS: tuple[type[BaseException], ...] = (
    genai_errors.APIError,
    genai_errors.UnknownApiResponseError,
    aiohttp.ClientError,
    TimeoutError,
    OSError,
)
"""What a google-genai call may raise for a failed request: API errors, unreadable answers and transport failures
(the SDK sends async requests through aiohttp and does not wrap its errors)."""

_OVERFLOW_PATTERN = re.compile(
    r"input token count.*?exceeds the maximum number of tokens allowed\D*(\d+)", re.IGNORECASE
)
# Google's canonical codes for failures that may pass; they stand in for the status when a stream reports an error.
_TRANSIENT_STATUSES = frozenset({"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "ABORTED"})
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def translate_error(exc: BaseException, *, provider: str, secrets: Sequence[str] = ()) -> ProviderError:
    """Translate what a google-genai call raised into a ``ProviderError`` (raise it ``from exc``).

    Args:
        exc: One of ``SDK_ERRORS``.
        provider: The provider's name, for the message.
        secrets: Strings (the API key) that must never appear in the message.

    Returns:
        ``ContextOverflowError`` when the input did not fit the model's window, else ``ProviderError`` with the HTTP
        status and whether a retry may succeed.
    """
    if isinstance(exc, genai_errors.APIError):
        return _api_error(exc, provider, secrets)
    if isinstance(exc, TimeoutError):
        return timed_out(provider)
    if isinstance(exc, aiohttp.ClientError | OSError):
        return unreachable(exc, provider, secrets)
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        # The SDK quotes the raw answer; it is not repeated here.
        return ProviderError(f"{provider} sent an answer that is not valid JSON", provider=provider)
    return unexpected_failure(exc, provider, secrets)


def _api_error(exc: genai_errors.APIError, provider: str, secrets: Sequence[str]) -> ProviderError:
    code = exc.code if isinstance(exc.code, int) and not isinstance(exc.code, bool) else None
    status = exc.status if isinstance(exc.status, str) else None
    message = safe_message(exc.message if isinstance(exc.message, str) and exc.message else _fallback(exc), secrets)
    label = " ".join(str(item) for item in (code, status) if item)
    if (overflow := _OVERFLOW_PATTERN.search(message)) is not None:
        return ContextOverflowError(
            f"{provider} rejected the request as too long for the model's context window ({label}): {message}",
            window=int(overflow.group(1)),
            provider=provider,
        )
    retry_after = retry_after_seconds(exc, genai_errors.APIError, stated_in=_retry_info_delay)
    if code:
        retryable = is_retryable_status(code) or status in _TRANSIENT_STATUSES
        return http_failure(provider, code, label, message, retry_after=retry_after, retryable=retryable)
    return ProviderError(
        f"{provider} reported an error: {message}",
        retryable=status in _TRANSIENT_STATUSES,
        provider=provider,
        retry_after=retry_after,
    )


def _retry_info_delay(exc: genai_errors.APIError) -> float | None:
    """The delay the ``RetryInfo`` detail of the error body states (``"retryDelay": "37s"``): where the Gemini API says
    how long to wait on 429 RESOURCE_EXHAUSTED."""
    body = exc.details
    error = body.get("error", body) if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    for detail in details if isinstance(details, Iterable) and not isinstance(details, str | bytes) else ():
        if isinstance(detail, Mapping) and detail.get("@type") == _RETRY_INFO:
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and (match := _DURATION.match(delay)):
                return float(match.group(1))
            if isinstance(delay, Mapping):  # the proto form, {"seconds": ..., "nanos": ...}
                seconds, nanos = _seconds(str(delay.get("seconds", 0))), delay.get("nanos", 0)
                if seconds is not None and isinstance(nanos, int):
                    return max(0.0, seconds + nanos / 1e9)
    return None


def _seconds(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return max(0.0, value) if value == value else None  # NaN is not a delay


def _fallback(exc: genai_errors.APIError) -> str:
    details = exc.details
    if isinstance(details, str) and details.strip():
        return details
    return str(exc)


__all__ = ["SDK_ERRORS", "translate_error"]
