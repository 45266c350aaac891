"""The Clock and IdGenerator ports: time and fresh ids, injectable so output can be made deterministic."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Tells the time."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary start that never goes backwards; for durations."""
        ...


@runtime_checkable
class IdGenerator(Protocol):
    """Makes ids that are unique within a process."""

    def new_id(self) -> str:
        """A fresh id of 32 lowercase hex digits."""
        ...
