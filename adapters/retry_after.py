"""Reads how long a server asked to wait before a retry, from ``Retry-After`` (and ``retry-after-ms``) headers."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import TypeVar

from ironhive.adapters.provider_errors import cause_of

_E = TypeVar("_E", bound=BaseException)

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""The statuses whose ``Retry-After`` asks a client to wait before sending the request again (RFC 9110 §10.2.3)."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` value: delta-seconds or an HTTP date; ``None`` when absent or unusable.

    Args:
        value: The header's value.

    Returns:
        Seconds to wait, never negative.
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after_from_headers(header: Callable[[str], str | None]) -> float | None:
    """Seconds to wait from a response's headers: ``retry-after-ms`` (more precise, sent by OpenAI and Anthropic)
    first, then ``retry-after``.

    Args:
        header: Looks a header up by lower-case name.
    """
    millis = parse_retry_after(header("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    return parse_retry_after(header("retry-after"))


def header_reader(headers: object) -> Callable[[str], str | None]:
    """A case-insensitive lookup over any response's headers (httpx2, aiohttp, a plain mapping), by lower-case name.

    Args:
        headers: The headers, or None when the response had none.
    """
    items = getattr(headers, "items", None)
    found: dict[str, str] = {}
    if callable(items):
        for key, value in items():
            if isinstance(key, str) and isinstance(value, str):
                found.setdefault(key.lower(), value)
    return found.get


def retry_after_seconds(
    exc: BaseException, kind: type[_E], *, stated_in: Callable[[_E], float | None] | None = None
) -> float | None:
    """How long a provider asked to wait before retrying the request that raised ``exc``.

    Read from the first ``kind`` error of ``exc``'s ``__cause__`` chain (so a translated ``ProviderError`` leads to the
    SDK's error): its response's ``retry-after-ms``/``retry-after`` headers, else what ``stated_in`` reads from the
    error itself (a delay stated in the body).

    Args:
        exc: What the SDK raised, or an error raised from it.
        kind: The SDK's error class that carries the HTTP response (as ``response``).
        stated_in: Reads a delay the error states elsewhere, for providers that put it in the body.

    Returns:
        Seconds to wait (never negative), or ``None`` when nothing usable was stated.
    """
    error = cause_of(exc, kind)
    if error is None:
        return None
    seconds = retry_after_from_headers(header_reader(getattr(getattr(error, "response", None), "headers", None)))
    return seconds if seconds is not None or stated_in is None else stated_in(error)


def retry_after_for_status(status: int, value: str | None) -> float | None:
    """The delay a response's ``Retry-After`` asks for, when its status is one that carries it (429 or 503)."""
    return parse_retry_after(value) if status in RETRY_AFTER_STATUSES else None
