"""MemoryEventLog: ids, bounded replay, waiting readers, LRU of session logs, forget."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.serve.hub import EventLog
from ironhive.adapters.serve.memory_log import MemoryEventLog, event_number


def test_it_is_an_event_log() -> None:
    assert isinstance(MemoryEventLog(10, 10), EventLog)


@pytest.mark.parametrize("bad", [(0, 1), (1, 0), (-1, 5)])
def test_limits_must_be_positive(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="positive"):
        MemoryEventLog(*bad)


@pytest.mark.parametrize("text", ["", "abc", "-1", "1.5", " 7", "7 ", "0x10", "١٢", "1" * 31])
def test_an_id_that_is_not_a_decimal_number_names_nothing(text: str) -> None:
    assert event_number(text) is None


async def test_ids_increase_and_replay_is_exact() -> None:
    log = MemoryEventLog(limit_per_session=100, max_sessions=10)
    ids = [await log.append("s", f"line {n}") for n in range(5)]
    assert [int(i) for i in ids] == sorted({int(i) for i in ids})
    replay = await log.read_after("s", ids[1], wait_seconds=0)
    assert [(e.id, e.line) for e in replay] == [(ids[n], f"line {n}") for n in (2, 3, 4)]
    assert await log.read_after("s", ids[-1], wait_seconds=0) == []
    assert [e.line for e in await log.read_after("s", None, wait_seconds=0)] == [f"line {n}" for n in range(5)]


async def test_only_the_newest_events_are_kept_and_an_older_id_replays_from_the_oldest_kept() -> None:
    log = MemoryEventLog(limit_per_session=3, max_sessions=10)
    ids = [await log.append("s", str(n)) for n in range(6)]
    assert [e.line for e in await log.read_after("s", ids[0], wait_seconds=0)] == ["3", "4", "5"]
    assert [e.line for e in await log.read_after("s", ids[3], wait_seconds=0)] == ["4", "5"]


async def test_a_garbage_or_foreign_id_replays_everything_kept_instead_of_failing() -> None:
    log = MemoryEventLog(limit_per_session=10, max_sessions=10)
    for n in range(3):
        await log.append("s", str(n))
    for after in ("not-a-number", "", str(10**25), "-5"):
        assert [e.line for e in await log.read_after("s", after, wait_seconds=0)] == ["0", "1", "2"]


async def test_ids_are_never_reused_after_forget_or_by_a_new_log() -> None:
    first = MemoryEventLog(limit_per_session=10, max_sessions=1)
    old = await first.append("s", "old")
    await first.forget("s")
    again = await first.append("s", "new")
    assert int(again) > int(old)
    # a client reconnecting with an id of the forgotten log still gets the new log's events
    assert [e.line for e in await first.read_after("s", old, wait_seconds=0)] == ["new"]
    # another process (a restart) keeps counting upwards
    assert int(await MemoryEventLog(10, 1).append("s", "x")) > int(again)


async def test_a_reader_waits_for_the_next_event_without_polling() -> None:
    log = MemoryEventLog(limit_per_session=10, max_sessions=10)
    last = await log.append("s", "a")
    reader = asyncio.create_task(log.read_after("s", last, wait_seconds=30))
    await asyncio.sleep(0.01)
    assert not reader.done()
    await log.append("s", "b")
    events = await asyncio.wait_for(reader, 1)
    assert [e.line for e in events] == ["b"]


async def test_a_reader_gets_nothing_when_nothing_comes_in_time() -> None:
    log = MemoryEventLog(limit_per_session=10, max_sessions=10)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await log.read_after("s", None, wait_seconds=0.05) == []
    assert loop.time() - started >= 0.04


async def test_forget_wakes_waiting_readers_with_nothing_and_drops_the_events() -> None:
    log = MemoryEventLog(limit_per_session=10, max_sessions=10)
    last = await log.append("s", "a")
    reader = asyncio.create_task(log.read_after("s", last, wait_seconds=30))
    await asyncio.sleep(0.01)
    await log.forget("s")
    assert await asyncio.wait_for(reader, 1) == []
    assert await log.read_after("s", None, wait_seconds=0) == []
    await log.forget("never-seen")


async def test_least_recently_used_logs_are_dropped_but_never_one_a_reader_waits_on() -> None:
    log = MemoryEventLog(limit_per_session=10, max_sessions=2)
    last = await log.append("waited", "w")
    waiting = asyncio.create_task(log.read_after("waited", last, wait_seconds=30))
    await asyncio.sleep(0.01)
    for n in range(5):
        await log.append(f"other{n}", "x")
    assert log.session_count == 2
    # the waited-on log survived five newer sessions; the newest other log is there too
    await log.append("waited", "w2")
    assert [e.line for e in await asyncio.wait_for(waiting, 1)] == ["w2"]
    assert [e.line for e in await log.read_after("other4", None, wait_seconds=0)] == ["x"]
    assert await log.read_after("other0", None, wait_seconds=0) == []


async def test_the_text_of_all_logs_stays_within_max_bytes_dropping_the_least_recently_used_first() -> None:
    log = MemoryEventLog(limit_per_session=100, max_sessions=10, max_bytes=50)
    for n in range(4):
        await log.append("old", f"old-{n:05}")  # 9 characters each
    for n in range(4):
        await log.append("new", f"new-{n:05}")
    assert log.kept_bytes <= 50
    old = [e.line for e in await log.read_after("old", None, wait_seconds=0)]
    new = [e.line for e in await log.read_after("new", None, wait_seconds=0)]
    assert new == [f"new-{n:05}" for n in range(4)]  # the most recently used log lost nothing
    assert old == ["old-00003"]  # the other kept only its newest event
    await log.append("new", "x" * 200)  # one event over the whole budget: still kept, as each log's newest is
    assert [e.line for e in await log.read_after("new", None, wait_seconds=0)][-1] == "x" * 200
    await log.forget("new")
    await log.forget("old")
    assert log.kept_bytes == 0


@dataclass
class _Model:
    """The specification: per session the newest events, LRU order of sessions, ids seen."""

    limit: int
    max_sessions: int
    logs: OrderedDict[int, list[tuple[int, str]]] = field(default_factory=OrderedDict)
    ids: dict[int, list[str]] = field(default_factory=dict)

    def touch(self, session: int) -> list[tuple[int, str]]:
        if session in self.logs:
            self.logs.move_to_end(session)
        else:
            if len(self.logs) >= self.max_sessions:
                self.logs.popitem(last=False)
            self.logs[session] = []
        return self.logs[session]

    def read(self, session: int, after: str | None) -> list[str]:
        events = self.touch(session)
        number = int(after) if after is not None and after.isascii() and after.isdecimal() else None
        if number is None or not events or number < events[0][0] or number > events[-1][0]:
            return [line for _, line in events]
        return [line for seq, line in events if seq > number]


_operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 3)),
        st.tuples(st.just("forget"), st.integers(0, 3)),
        st.tuples(st.just("read"), st.integers(0, 3), st.integers(-3, 40)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(operations=_operations, limit=st.integers(1, 5), max_sessions=st.integers(1, 4))
def test_random_appends_reads_and_forgets_match_a_simple_model(
    operations: list[tuple[object, ...]], limit: int, max_sessions: int
) -> None:
    async def scenario() -> None:
        log = MemoryEventLog(limit_per_session=limit, max_sessions=max_sessions)
        model = _Model(limit=limit, max_sessions=max_sessions)
        issued: list[str] = []
        counter = 0
        for operation in operations:
            match operation:
                case ("append", int(session)):
                    counter += 1
                    line = f"{session}:{counter}"
                    event_id = await log.append(str(session), line)
                    assert not issued or int(event_id) > int(issued[-1])
                    issued.append(event_id)
                    events = model.touch(session)
                    events.append((int(event_id), line))
                    del events[:-limit]
                case ("forget", int(session)):
                    await log.forget(str(session))
                    model.logs.pop(session, None)
                case ("read", int(session), int(pick)):
                    # an id issued before (any session, possibly no longer kept), None, or garbage
                    if pick < 0:
                        after = (None, "garbage", "99999999999999999999")[pick + 3]
                    else:
                        after = issued[pick % len(issued)] if issued else None
                    got = await log.read_after(str(session), after, wait_seconds=0)
                    assert [e.line for e in got] == model.read(session, after)
                    assert [int(e.id) for e in got] == sorted({int(e.id) for e in got})
            assert log.session_count == len(model.logs)
            assert log.kept_bytes == sum(len(line) for events in model.logs.values() for _, line in events)

    asyncio.run(scenario())
