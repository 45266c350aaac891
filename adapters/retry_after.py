"""Reads how long a server asked to wait before a retry, from ``Retry-After`` (and ``retry-after-ms``) headers."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime


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
