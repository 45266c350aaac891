"""What an ``ironhive serve`` front talks to, whichever backend runs the turns: the TurnHub and the EventLog."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.turns import ProcessMessage
from ironhive.domain.errors import IronHiveError
from ironhive.protocol.models import HitlResponseRequest, UserMessageRequest


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One event of a session's log.

    Attributes:
        id: Its id in the log: opaque, increasing within the session; the SSE ``id:`` and what ``Last-Event-ID``
            names after a reconnect.
        line: The event as the turn-stream protocol writes it (one JSON object, no newline).
    """

    id: str
    line: str


@runtime_checkable
class EventLog(Protocol):
    """Each session's events, in order, the newest ``limit`` of them kept for replay."""

    async def append(self, session_id: str, line: str) -> str:
        """Add one serialized event at the end of the session's log; returns its id."""
        ...

    async def read_after(self, session_id: str, after: str | None, *, wait_seconds: float) -> Sequence[LoggedEvent]:
        """The session's events after ``after`` (from the oldest kept when ``None`` or no longer kept), oldest first.

        Waits up to ``wait_seconds`` for one when there is none yet; an empty result means none came in that time.
        """
        ...

    async def forget(self, session_id: str) -> None:
        """Drop the session's log (the session was deleted)."""
        ...


class TurnQueueFullError(IronHiveError):
    """A session already has as many turns waiting as it may, or the server as many as it holds: try again later.

    Attributes:
        retry_after_seconds: When trying again is worthwhile (the ``Retry-After`` of the 429 answer).
    """

    def __init__(self, message: str, *, retry_after_seconds: float) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True, slots=True)
class HubLoad:
    """How busy the turn backend is (``/healthz`` reports it).

    Attributes:
        running: Turns running now (in this process, or across workers with Redis).
        queued: Turns waiting to run.
    """

    running: int
    queued: int


@runtime_checkable
class TurnHub(Protocol):
    """Runs the turns the fronts take, one session's turns one at a time and in order, writing events to the log.

    Every taken turn ends with exactly one ``turn_end`` in the session's log, whatever happens to it.
    """

    async def submit(self, session_id: str, message: UserMessageRequest) -> str:
        """Queue a turn of the session; returns its turn id.

        Raises:
            TurnQueueFullError: The session's queue (or the server's) is full; nothing was queued.
        """
        ...

    async def answer(self, session_id: str, response: HitlResponseRequest) -> str | None:
        """Give an approval answer to the session's running turn; ``None`` when it was taken, else why not."""
        ...

    async def cancel(self, session_id: str, turn_id: str | None = None) -> bool:
        """Cancel the session's running turn (or the one named, running or queued); whether there was one."""
        ...

    async def drop(self, session_id: str) -> None:
        """Cancel everything the session has running or queued (it is being deleted)."""
        ...

    async def load(self) -> HubLoad:
        """How many turns run and wait."""
        ...

    async def aclose(self) -> None:
        """Stop: running turns are cancelled (each still ends with its ``turn_end``), waiting approvals rejected."""
        ...


@dataclass(frozen=True, slots=True)
class SessionRuntime:
    """The agent of one session, ready to run its turns.

    Attributes:
        process: Runs one turn: a user message in, its events out (the turn recorded in the session when it ends).
        bridge: The session's approval service: ``hitl_request`` events go out through it, answers come back to it.
        close: Releases the agent (its session stays stored).
    """

    process: ProcessMessage
    bridge: HitlBridge
    close: Callable[[], Awaitable[None]]


OpenRuntime = Callable[[str], Awaitable[SessionRuntime]]
"""Builds the agent of a session (by id), its stored history restored; the composition root provides it."""
