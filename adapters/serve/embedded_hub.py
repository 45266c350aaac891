"""EmbeddedTurnHub: ``ironhive serve``'s default backend, every session's turns run in this process."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

from ironhive.adapters.serve.hub import EventLog, HubLoad, OpenRuntime, SessionRuntime, TurnQueueFullError
from ironhive.adapters.server.turns import TurnSession
from ironhive.protocol.models import DEFAULT_PROTOCOL, HitlResponseRequest, ServerEvent, UserMessageRequest

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1.0
NO_TURN = "no turn of this session is running"
SHUT_DOWN = "The server is shutting down"


class _Live:
    """One session while it is held in memory: its turn order and, from its first turn on, its agent."""

    __slots__ = ("hub", "runtime", "session_id", "turns")

    def __init__(self, hub: EmbeddedTurnHub, session_id: str) -> None:
        self.hub = hub
        self.session_id = session_id
        self.runtime: SessionRuntime | None = None
        self.turns = TurnSession(
            self.process, self.send, max_queued_messages=hub.max_queued_turns, skip_context_enrichment=True
        )

    def start(self) -> None:
        """Start taking turns (no await: the caller's table stays consistent)."""
        self.turns.start()

    async def send(self, event: ServerEvent) -> None:
        await self.hub.log.append(self.session_id, self.hub.serialize(event))

    async def process(self, message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        """Runs one turn once a slot is free, opening the session's agent at its first turn (a failure to open
        ends the turn with an ``error``, as any failing turn does)."""
        hub = self.hub
        hub.waiting += 1
        try:
            await hub.slots.acquire()
        finally:
            hub.waiting -= 1
        hub.running += 1
        try:
            runtime = self.runtime
            if runtime is None:
                runtime = self.runtime = await hub.open_runtime(self.session_id)
                runtime.bridge.attach(self.send)
            async for event in runtime.process(message):
                yield event
        finally:
            hub.running -= 1
            hub.slots.release()

    async def close(self) -> None:
        """Cancel what runs or waits (each turn still ends with its ``turn_end``), then release the agent."""
        self.turns.cancel_all()
        self.turns.close()
        try:
            await self.turns.wait_closed()
        finally:
            runtime, self.runtime = self.runtime, None
            if runtime is not None:
                runtime.bridge.close()
                await runtime.close()


class EmbeddedTurnHub:
    """Runs every session's turns in this process (a :class:`TurnHub`).

    Each session's turns run one at a time in submission order through a :class:`TurnSession` (exactly one
    ``turn_end`` per turn, open tool calls closed), their events appended to the log; at most
    ``max_concurrent_turns`` turns run at once across sessions. A session's agent is opened at its first turn and
    kept while the session is among the ``max_live_sessions`` most recently used; beyond that the least recently used
    idle sessions are released (their history stays in the session store). When every held session is busy a new
    session's turn is refused with :class:`TurnQueueFullError`, so nothing grows without bound.

    Args:
        open_runtime: Builds a session's agent.
        log: Where the events go.
        max_concurrent_turns: Turns running at once (``server.maxConcurrentTurns``).
        max_queued_turns: Turns waiting per session behind its running one (``server.maxQueuedTurns``).
        max_live_sessions: Sessions whose agents are held in memory.
        serialize: Writes an event as its log line.
    """

    def __init__(
        self,
        open_runtime: OpenRuntime,
        log: EventLog,
        *,
        max_concurrent_turns: int,
        max_queued_turns: int,
        max_live_sessions: int,
        serialize: Callable[[ServerEvent], str] = DEFAULT_PROTOCOL.serialize_event,
    ) -> None:
        if min(max_concurrent_turns, max_queued_turns, max_live_sessions) < 1:
            raise ValueError("max_concurrent_turns, max_queued_turns and max_live_sessions must be positive")
        self.open_runtime = open_runtime
        self.log = log
        self.serialize = serialize
        self.max_queued_turns = max_queued_turns
        self.max_live_sessions = max_live_sessions
        self.slots = asyncio.Semaphore(max_concurrent_turns)
        self.running = 0
        self.waiting = 0
        self._sessions: OrderedDict[str, _Live] = OrderedDict()
        self._closed = False

    @property
    def live_sessions(self) -> int:
        """How many sessions are held in memory now."""
        return len(self._sessions)

    async def submit(self, session_id: str, message: UserMessageRequest) -> str:
        """Queue a turn of the session; returns its turn id (32 hex digits).

        Raises:
            TurnQueueFullError: The session already has ``max_queued_turns`` waiting, every held session is busy, or
                the hub is shutting down; nothing was queued.
        """
        if self._closed:
            raise TurnQueueFullError(SHUT_DOWN, retry_after_seconds=RETRY_AFTER_SECONDS)
        released: _Live | None = None
        live = self._sessions.get(session_id)
        if live is None:
            # no await until the new session is in the table: a concurrent submit sees it
            if len(self._sessions) >= self.max_live_sessions and (released := self._take_idle()) is None:
                raise TurnQueueFullError(
                    f"Every one of the {self.max_live_sessions} sessions held is busy",
                    retry_after_seconds=RETRY_AFTER_SECONDS,
                )
            live = self._sessions[session_id] = _Live(self, session_id)
            live.start()
        self._sessions.move_to_end(session_id)
        turn_id = uuid.uuid4().hex
        taken = live.turns.submit(message, turn_id)
        if released is not None:
            await asyncio.shield(self._close(released))  # a caller that goes away leaves no agent half closed
        if not taken:
            raise TurnQueueFullError(
                f"{self.max_queued_turns} turns of this session are already waiting",
                retry_after_seconds=RETRY_AFTER_SECONDS,
            )
        return turn_id

    async def answer(self, session_id: str, response: HitlResponseRequest) -> str | None:
        """Give an approval answer to the session's running turn; ``None`` when it was taken, else why not."""
        live = self._sessions.get(session_id)
        if live is None or live.runtime is None:
            return "no approval request is waiting"
        return live.runtime.bridge.resolve(response)

    async def cancel(self, session_id: str, turn_id: str | None = None) -> bool:
        """Cancel the session's running turn (or the one named, running or queued); whether there was one."""
        live = self._sessions.get(session_id)
        if live is None:
            return False
        if turn_id is None:
            return live.turns.cancel_running()
        return live.turns.cancel_turn(turn_id)

    async def drop(self, session_id: str) -> None:
        """Cancel everything the session has running or queued and release its agent."""
        live = self._sessions.pop(session_id, None)
        if live is not None:
            await live.close()

    async def load(self) -> HubLoad:
        """How many turns run and wait (those waiting for a free slot count as waiting)."""
        queued = sum(live.turns.queued[0] for live in self._sessions.values())
        return HubLoad(running=self.running, queued=queued + self.waiting)

    async def aclose(self) -> None:
        """Stop: running turns are cancelled (each still ends with its ``turn_end``), waiting approvals rejected."""
        self._closed = True
        sessions = list(self._sessions.values())
        self._sessions.clear()
        await asyncio.gather(*(self._close(live) for live in sessions))

    def _take_idle(self) -> _Live | None:
        """Take the least recently used idle session out of the table (the caller closes it), if there is one."""
        for live in self._sessions.values():
            if live.turns.idle:
                del self._sessions[live.session_id]
                return live
        return None

    @staticmethod
    async def _close(live: _Live) -> None:
        try:
            await live.close()
        except Exception as error:  # one agent failing to close must not stop the others'
            logger.warning("session %s did not close cleanly: %s", live.session_id, error, exc_info=True)
