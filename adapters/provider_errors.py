"""Helpers the provider adapters share to turn SDK exceptions into ironhive's ``ProviderError``s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ironhive.domain.errors import ProviderError

MAX_MESSAGE = 500
"""The most characters of a server's message a ``ProviderError`` repeats."""

_E = TypeVar("_E", bound=BaseException)


def is_retryable_status(status: int) -> bool:
    """Whether a request that failed with HTTP ``status`` may succeed if sent again (Anthropic's 529 included)."""
    return status in (408, 409, 429) or status >= 500


def clip(text: str) -> str:
    """``text`` on one line, cut to ``MAX_MESSAGE`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_MESSAGE else flat[: MAX_MESSAGE - 1] + "…"


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret (the API key) replaced; secrets shorter than 4 characters are left alone."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text


def safe_message(text: str, secrets: Sequence[str]) -> str:
    """``text`` fit to repeat in an error: secrets redacted, then clipped."""
    return clip(redact(text, secrets))


def unreachable(exc: BaseException, provider: str, secrets: Sequence[str]) -> ProviderError:
    """The retryable error for a provider that could not be reached.

    The reason given is the underlying cause's text when there is one (the SDKs wrap the transport's error), else the
    error's own text, else its type's name; secrets redacted.
    """
    reason = (str(exc.__cause__) if exc.__cause__ else "") or str(exc) or type(exc).__name__
    return ProviderError(
        f"could not connect to {provider}: {safe_message(reason, secrets)}", retryable=True, provider=provider
    )


def cause_of(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` or the first error of its ``__cause__`` chain that is a ``kind`` (a translated error leads to the SDK's).

    Args:
        exc: The error to start from.
        kind: The exception class to look for.
    """
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, kind):
            return current
        current = current.__cause__
    return None


def http_failure(
    provider: str, status: int, label: str, message: str, *, retry_after: float | None, retryable: bool | None = None
) -> ProviderError:
    """The error for a provider's HTTP failure answer.

    Args:
        provider: The provider's name.
        status: The HTTP status.
        label: How the status is shown (the status with what the provider calls the error, e.g. ``429 RATE_LIMITED``).
        message: The server's message, already made safe.
        retry_after: The wait the provider asked for.
        retryable: Whether a retry may succeed; by default, what the status says (``is_retryable_status``).
    """
    return ProviderError(
        f"{provider} returned HTTP {label}: {message}",
        status=status,
        retryable=is_retryable_status(status) if retryable is None else retryable,
        provider=provider,
        retry_after=retry_after,
    )


def timed_out(provider: str) -> ProviderError:
    """The retryable error for a provider that did not answer in time."""
    return ProviderError(f"{provider} did not answer in time", retryable=True, provider=provider)


def unexpected_failure(exc: BaseException, provider: str, secrets: Sequence[str]) -> ProviderError:
    """The error for an SDK exception no other rule matched."""
    return ProviderError(f"{provider} failed: {safe_message(str(exc), secrets)}", provider=provider)


__all__ = [
    "MAX_MESSAGE",
    "cause_of",
    "clip",
    "http_failure",
    "is_retryable_status",
    "redact",
    "safe_message",
    "timed_out",
    "unexpected_failure",
    "unreachable",
]
