"""MemoryEventLog: the embedded ``serve``'s per-session event logs, bounded, in this process's memory."""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict, deque
from collections.abc import Sequence

from ironhive.adapters.serve.hub import LoggedEvent

_DECIMAL = re.compile(r"[0-9]{1,30}")


def event_number(event_id: str | None) -> int | None:
    """The sequence number an event id names, or ``None`` when it names none (absent, or not a decimal number)."""
    if event_id is None or _DECIMAL.fullmatch(event_id) is None:
        return None
    return int(event_id)


class _SessionLog:
    """One session's newest events and what its waiting readers wait on."""

    __slots__ = ("changed", "events", "readers")

    def __init__(self) -> None:
        self.events: deque[tuple[int, LoggedEvent]] = deque()
        self.changed = asyncio.Event()
        self.readers = 0

    def wake(self) -> None:
        """Wake every reader waiting now; later readers wait on a fresh event."""
        self.changed.set()
        self.changed = asyncio.Event()

    def after(self, number: int | None) -> list[LoggedEvent]:
        """The kept events numbered above ``number``, oldest first (all kept when ``None``, older than the oldest
        kept, or newer than the newest: such an id is not of this log)."""
        events = self.events
        if number is None or not events or number < events[0][0] or number > events[-1][0]:
            return [event for _, event in events]
        newer: list[LoggedEvent] = []
        for seq, event in reversed(events):
            if seq <= number:
                break
            newer.append(event)
        newer.reverse()
        return newer


class MemoryEventLog:
    """Each session's newest events, in order, in memory (an :class:`EventLog`).

    Ids are decimal numbers, strictly increasing within a session and never reused: they come from one counter for
    the whole process that starts at the start time in microseconds, so an id stays unique after its event, its
    session's log or the whole process is gone. ``read_after`` with an id the log does not hold in its range (older
    than the oldest kept, newer than the newest, or not a number) reads from the oldest kept event.

    At most ``max_sessions`` logs are kept: beyond that the least recently used log nobody is waiting on is dropped
    (a client reconnecting to it then replays what came after). The events of all logs together hold at most
    ``max_bytes`` of text: beyond that the oldest events of the least recently used logs go first. Readers wait on an
    event per log, never by polling.

    Args:
        limit_per_session: Events kept per session (``server.eventLogSize``); older ones are dropped.
        max_sessions: Session logs kept in memory.
        max_bytes: Characters of event text kept over all logs (the newest event of a log is always kept).
    """

    def __init__(self, limit_per_session: int, max_sessions: int, max_bytes: int = 64 * 1024 * 1024) -> None:
        if limit_per_session < 1 or max_sessions < 1 or max_bytes < 1:
            raise ValueError("limit_per_session, max_sessions and max_bytes must be positive")
        self._limit = limit_per_session
        self._max_sessions = max_sessions
        self._max_bytes = max_bytes
        self._bytes = 0
        self._logs: OrderedDict[str, _SessionLog] = OrderedDict()
        self._next = time.time_ns() // 1000

    @property
    def kept_bytes(self) -> int:
        """Characters of event text held now, over all logs."""
        return self._bytes

    @property
    def session_count(self) -> int:
        """How many session logs are held now."""
        return len(self._logs)

    async def append(self, session_id: str, line: str) -> str:
        """Add one serialized event at the end of the session's log; returns its id."""
        log = self._log(session_id)
        seq = self._next
        self._next += 1
        event = LoggedEvent(id=str(seq), line=line)
        if len(log.events) >= self._limit:
            self._bytes -= len(log.events.popleft()[1].line)
        log.events.append((seq, event))
        self._bytes += len(line)
        self._trim()
        log.wake()
        return event.id

    async def read_after(self, session_id: str, after: str | None, *, wait_seconds: float) -> Sequence[LoggedEvent]:
        """The session's events after ``after`` (from the oldest kept when ``None`` or no longer kept), oldest first.

        Waits up to ``wait_seconds`` for one when there is none yet; an empty result means none came in that time
        (or the log was forgotten meanwhile).
        """
        number = event_number(after)
        log = self._log(session_id)
        events = log.after(number)
        if events or wait_seconds <= 0:
            return events
        changed = log.changed
        log.readers += 1
        try:
            async with asyncio.timeout(wait_seconds):
                await changed.wait()
        except TimeoutError:
            return []
        finally:
            log.readers -= 1
        if self._logs.get(session_id) is not log:
            return []  # forgotten while waiting
        return log.after(number)

    async def forget(self, session_id: str) -> None:
        """Drop the session's log (the session was deleted); readers waiting on it get nothing."""
        log = self._logs.pop(session_id, None)
        if log is not None:
            self._bytes -= sum(len(event.line) for _, event in log.events)
            log.wake()

    def _log(self, session_id: str) -> _SessionLog:
        log = self._logs.get(session_id)
        if log is not None:
            self._logs.move_to_end(session_id)
            return log
        self._evict(excess=len(self._logs) + 1 - self._max_sessions)
        log = self._logs[session_id] = _SessionLog()
        return log

    def _trim(self) -> None:
        """Drop the oldest events of the least recently used logs until the kept text fits ``max_bytes``."""
        for log in self._logs.values():
            if self._bytes <= self._max_bytes:
                return
            while len(log.events) > 1 and self._bytes > self._max_bytes:
                self._bytes -= len(log.events.popleft()[1].line)

    def _evict(self, *, excess: int) -> None:
        """Drop up to ``excess`` of the least recently used logs nobody waits on (a waited-on log is never dropped)."""
        if excess <= 0:
            return
        idle: list[str] = []
        for session_id, log in self._logs.items():
            if log.readers == 0:
                idle.append(session_id)
                if len(idle) == excess:
                    break
        for session_id in idle:
            self._bytes -= sum(len(event.line) for _, event in self._logs.pop(session_id).events)
