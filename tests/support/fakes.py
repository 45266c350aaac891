"""Deterministic fakes of the small ports (Clock, IdGenerator) and a recording tool, for tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import JsonValue, ToolSpec


class FakeClock:
    """A clock that advances only when told to (or by ``step`` on every monotonic read)."""

    def __init__(self, start: datetime | None = None, step: float = 0.0) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._monotonic = 0.0
        self._step = step

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        self._monotonic += self._step
        return self._monotonic

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds


class SequentialIds:
    """Ids 000…001, 000…002, … (32 hex digits)."""

    def __init__(self) -> None:
        self._next = 0

    def new_id(self) -> str:
        self._next += 1
        return f"{self._next:032x}"


class RecordingTool:
    """A tool that records its calls and answers from a function of its arguments."""

    def __init__(self, name: str = "echo", *, fail_with: Exception | None = None, required: tuple[str, ...] = ()):
        self._name = name
        self._fail_with = fail_with
        self._required = required
        self.calls: list[dict[str, JsonValue]] = []

    @property
    def spec(self) -> ToolSpec:
        properties: dict[str, JsonValue] = {name: {"type": "string"} for name in self._required}
        return ToolSpec(
            name=self._name,
            description=f"The {self._name} test tool.",
            parameters={"type": "object", "properties": properties, "required": list(self._required)},
        )

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        self.calls.append(dict(arguments))
        for name in self._required:
            if name not in arguments:
                raise ToolArgumentError(f"Missing required parameter '{name}'", parameter=name)
        if self._fail_with is not None:
            raise self._fail_with
        return f"{self._name}: {dict(arguments)}"
