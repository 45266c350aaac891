"""turn_end sums cached and reasoning tokens over the turn's model calls and leaves them out when none reported them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.server.events import to_server_events
from ironhive.domain.turn import AgentChunk, UsageChunk
from ironhive.ports.chat import Usage
from ironhive.protocol.models import TurnEndEvent, serialize_event

maybe = st.none() | st.integers(min_value=0, max_value=10**6)
usages = st.builds(Usage, input_tokens=maybe, output_tokens=maybe, cached_input_tokens=maybe, reasoning_tokens=maybe)


async def _chunks(reported: list[Usage]) -> AsyncIterator[AgentChunk]:
    for usage in reported:
        yield UsageChunk(usage=usage)


async def _turn_end(reported: list[Usage]) -> TurnEndEvent:
    events = [event async for event in to_server_events(_chunks(reported))]
    last = events[-1]
    assert isinstance(last, TurnEndEvent)
    return last


def _sum(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


@given(reported=st.lists(usages, max_size=4))
def test_turn_end_carries_the_summed_details_only_when_reported(reported: list[Usage]) -> None:
    event = asyncio.run(_turn_end(reported))
    line = json.loads(serialize_event(event))

    cached = _sum([usage.cached_input_tokens for usage in reported])
    reasoning = _sum([usage.reasoning_tokens for usage in reported])
    assert line.get("cached_input_tokens") == cached and ("cached_input_tokens" in line) == (cached is not None)
    assert line.get("reasoning_tokens") == reasoning and ("reasoning_tokens" in line) == (reasoning is not None)
    assert line["input_tokens"] == _sum([usage.input_tokens for usage in reported])
