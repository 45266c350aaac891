"""Binds an agent loop to a stored session: opening, resuming or forking it, and recording every turn."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import SessionNotFoundError
from ironhive.domain.turn import AgentChunk, TurnCompleted, TurnRecord
from ironhive.ports.sessions import EndReason, ExecutionLog, SessionInfo, SessionStore


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionRequest:
    """Which session a run talks in.

    Attributes:
        continue_latest: ``-c``: the most recent session of this project (a new one when there is none).
        resume: ``-r ID``: that session.
        fork: ``--fork``: continue a copy of the resumed session (the original ends as ``forked``).
        session_id: A server's ``--session-id``: that session, created when it does not exist yet.
    """

    continue_latest: bool = False
    resume: str | None = None
    fork: bool = False
    session_id: str | None = None


class SessionBinding:
    """A loop bound to its stored session: the history is restored on open, each finished turn is appended."""

    def __init__(self, store: SessionStore, log: ExecutionLog, info: SessionInfo, loop: AgentLoop) -> None:
        self._store = store
        self._log = log
        self.info = info
        self._loop = loop
        self._turns = 0

    @classmethod
    async def open(
        cls, loop: AgentLoop, request: SessionRequest, *, model: str, store: SessionStore, log: ExecutionLog
    ) -> SessionBinding:
        """Open (create, continue, resume or fork) the session and restore its conversation into ``loop``.

        Args:
            loop: The agent loop to bind.
            request: Which session.
            model: The model a new session records.
            store: Where the project's sessions are kept.
            log: Where each turn's entries are written.

        Raises:
            SessionNotFoundError: ``-r`` names no session of this project.
        """
        info = await _open(store, request, model)
        loop.reset(await store.load_messages(info.id))
        return cls(store, log, info, loop)

    @property
    def store(self) -> SessionStore:
        """Where the session is kept (and the project's other sessions)."""
        return self._store

    @property
    def log(self) -> ExecutionLog:
        """Where each turn's entries are written."""
        return self._log

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.info.id

    async def record(self, prompt: str, turn: TurnRecord) -> None:
        """Store a finished turn (atomically) and write its execution-log entries."""
        self._turns += 1
        await self._store.append_turn(self.info.id, turn.messages)
        await self._log.turn_start(self.info.id, self._turns, prompt)
        for step, call in enumerate(turn.tool_calls, start=1):
            await self._log.tool_call(self.info.id, self._turns, step, call.call_id, call.name, call.arguments_text)
        usage = turn.usage
        await self._log.turn_end(
            self.info.id,
            self._turns,
            response_length=len(turn.content),
            tool_calls=len(turn.tool_calls),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )

    async def recording(self, prompt: str, chunks: AsyncIterator[AgentChunk]) -> AsyncGenerator[AgentChunk, None]:
        """Pass ``chunks`` through, recording the turn when it completes."""
        async for chunk in chunks:
            if isinstance(chunk, TurnCompleted):
                await self.record(prompt, chunk.turn)
            yield chunk

    async def close(self, reason: EndReason) -> None:
        """End the session (``user_exit``, ``completed`` or ``error``)."""
        await self._store.end(self.info.id, reason)


async def _open(store: SessionStore, request: SessionRequest, model: str) -> SessionInfo:
    if request.session_id is not None:
        try:
            return await store.get(request.session_id)
        except SessionNotFoundError:
            return await store.create(model, session_id=request.session_id)
    source: SessionInfo | None = None
    if request.resume is not None:
        source = await store.get(request.resume)
    elif request.continue_latest:
        source = await store.latest()
    if source is None:
        return await store.create(model)
    return await store.fork(source.id) if request.fork else source
