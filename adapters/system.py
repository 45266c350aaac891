"""The system clock and random id generator (the real Clock and IdGenerator)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime


class SystemClock:
    """The Clock of the real world."""

    def now(self) -> datetime:
        """The current time in UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """Seconds of a clock that never goes backwards."""
        return time.monotonic()


class UuidIdGenerator:
    """Random 32-hex ids (UUID4, the "N" format)."""

    def new_id(self) -> str:
        """A fresh random id."""
        return uuid.uuid4().hex
