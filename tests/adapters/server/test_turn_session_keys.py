"""TurnSession's keyed turns (what ``serve`` builds on): submit, cancel_turn, cancel_all, idle, bounded queue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.server.turns import TurnSession
from ironhive.protocol.models import ServerEvent, TextDeltaEvent, TurnEndEvent, UserMessageRequest


class Recorder:
    """A processor that holds every turn until released, and the events written."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.ran: list[str] = []
        self.events: list[ServerEvent] = []
        self.closed = 0

    async def process(self, request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        self.ran.append(request.content)
        try:
            await self.release.wait()
            yield TextDeltaEvent(content=request.content)
            yield TurnEndEvent.from_counts()
        finally:
            self.closed += 1

    async def send(self, event: ServerEvent) -> None:
        self.events.append(event)

    def turn_ends(self) -> int:
        return sum(isinstance(event, TurnEndEvent) for event in self.events)


async def test_submit_refuses_beyond_the_limit_without_queueing_anything() -> None:
    recorder = Recorder()
    async with TurnSession(recorder.process, recorder.send, max_queued_messages=1) as session:
        assert session.idle
        assert session.submit(UserMessageRequest(content="a"), "k1")
        await asyncio.sleep(0)  # a starts
        assert session.submit(UserMessageRequest(content="b"), "k2")
        assert not session.submit(UserMessageRequest(content="c"), "k3")
        assert session.queued == (1, 1)
        assert not session.idle
        recorder.release.set()
    assert recorder.ran == ["a", "b"]
    assert recorder.turn_ends() == 2
    assert session.idle


async def test_a_closed_session_takes_no_submission() -> None:
    recorder = Recorder()
    async with TurnSession(recorder.process, recorder.send) as session:
        session.close()
        assert not session.submit(UserMessageRequest(content="a"), "k")
    assert recorder.events == []


async def test_cancel_all_ends_every_turn_once_and_closes_the_running_processor() -> None:
    recorder = Recorder()
    async with TurnSession(recorder.process, recorder.send) as session:
        for n in range(4):
            session.submit(UserMessageRequest(content=str(n)), f"k{n}")
        await asyncio.sleep(0.01)
        assert session.cancel_all() == 4
        assert session.cancel_all() == 0
    assert recorder.ran == ["0"]
    assert recorder.closed == 1
    assert [type(event) for event in recorder.events] == [TurnEndEvent] * 4


@settings(max_examples=100, deadline=None)
@given(
    actions=st.lists(
        st.one_of(st.tuples(st.just("submit"), st.integers(0, 20)), st.tuples(st.just("cancel"), st.integers(0, 20))),
        max_size=40,
    )
)
def test_random_submits_and_cancels_end_every_turn_once_and_run_exactly_the_uncancelled(
    actions: list[tuple[str, int]],
) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        submitted: list[str] = []
        cancelled: set[str] = set()
        async with TurnSession(recorder.process, recorder.send, max_queued_messages=5) as session:
            session.submit(UserMessageRequest(content="first"), "first")
            await asyncio.sleep(0)  # "first" runs and holds everything behind it
            for action, number in actions:
                key = f"k{number}"
                if action == "submit" and key not in submitted:
                    if session.submit(UserMessageRequest(content=key), key):
                        submitted.append(key)
                elif action == "cancel":
                    taken = session.cancel_turn(key)
                    assert taken == (key in submitted and key not in cancelled)
                    if taken:
                        cancelled.add(key)
                waiting = len(submitted) - len(cancelled)
                assert session.queued[0] == waiting <= 5
                # cancelled neighbours merge: the queue never holds more than twice what waits, plus one
                assert len(session._queue) <= 2 * waiting + 1
            recorder.release.set()
        assert recorder.ran == ["first", *(key for key in submitted if key not in cancelled)]
        assert recorder.turn_ends() == 1 + len(submitted)
        texts = [event.content for event in recorder.events if isinstance(event, TextDeltaEvent)]
        assert texts == recorder.ran

    asyncio.run(scenario())
