"""Binds an agent loop to a stored session: opening, resuming or forking it, and recording every turn."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ConfigurationError, IronHiveError, SessionNotFoundError
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


SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A session id a client may choose: 1 to 128 ASCII letters, digits, ``.``, ``_`` or ``-``, starting with a letter or
a digit (so never a path, ``..`` or an option-like ``-x``)."""


def session_id_problem(session_id: str, *, name: str = "--session-id") -> str | None:
    """Why ``session_id`` cannot name a session, or None when it can (see :data:`SESSION_ID_PATTERN`).

    Args:
        session_id: The id a client chose.
        name: What the message calls it (the command-line option by default).
    """
    if SESSION_ID_PATTERN.fullmatch(session_id):
        return None
    shown = session_id if len(session_id) <= 40 else session_id[:37] + "..."
    return (
        f"{name} {shown!r} is not a valid session id: use 1 to 128 letters, digits, '.', '_' or '-', "
        "starting with a letter or a digit"
    )


class SessionBinding:
    """A loop bound to its stored session: the history is restored on open, each finished turn is appended.

    A new session is stored with its first turn: a run that fails, is killed or is left before any turn finished
    leaves no empty session behind (its id is fixed from the start all the same).
    """

    def __init__(
        self,
        store: SessionStore,
        log: ExecutionLog,
        session_id: str,
        loop: AgentLoop,
        *,
        model: str,
        stored: bool = True,
    ) -> None:
        self._store = store
        self._log = log
        self._session_id = session_id
        self._loop = loop
        self._model = model
        self._stored = stored
        self._turns = 0

    @classmethod
    async def open(
        cls, loop: AgentLoop, request: SessionRequest, *, model: str, store: SessionStore, log: ExecutionLog
    ) -> SessionBinding:
        """Open (continue, resume or fork) the session and restore its conversation into ``loop``, or prepare a new
        one (created when its first turn is recorded).

        Args:
            loop: The agent loop to bind.
            request: Which session.
            model: The model a new session records.
            store: Where the project's sessions are kept.
            log: Where each turn's entries are written.

        Raises:
            SessionNotFoundError: ``-r`` names no session of this project.
            ConfigurationError: ``request.session_id`` is not a valid session id (see :func:`session_id_problem`).
        """
        if request.session_id is not None and (problem := session_id_problem(request.session_id, name="Session id")):
            raise ConfigurationError(problem)
        info = await _existing(store, request)
        if info is None:
            loop.reset(())
            session_id = request.session_id or await store.new_id()
            return cls(store, log, session_id, loop, model=model, stored=False)
        loop.reset(await store.load_messages(info.id))
        return cls(store, log, info.id, loop, model=model)

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
        return self._session_id

    @property
    def stored(self) -> bool:
        """Whether the session exists in the store (a new one is created with its first turn)."""
        return self._stored

    async def _create_once(self) -> None:
        """Create the new session in the store, unless it exists: a record cancelled while it created the session
        (the store finishes its write all the same) has already done it."""
        if self._stored:
            return
        try:
            await self._store.create(self._model, session_id=self._session_id)
        except IronHiveError:
            try:
                await self._store.get(self._session_id)
            except SessionNotFoundError:
                raise
        self._stored = True

    async def record(self, prompt: str, turn: TurnRecord) -> None:
        """Store a finished turn (atomically; the session is created first when it is new) and write its log entries."""
        await self._create_once()
        self._turns += 1
        await self._store.append_turn(self._session_id, turn.messages)
        await self._log.turn_start(self._session_id, self._turns, prompt)
        for step, call in enumerate(turn.tool_calls, start=1):
            await self._log.tool_call(self._session_id, self._turns, step, call.call_id, call.name, call.arguments_text)
        usage = turn.usage
        await self._log.turn_end(
            self._session_id,
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
        """End the session (``user_exit``, ``completed`` or ``error``); a session never stored has nothing to end."""
        if self._stored:
            await self._store.end(self._session_id, reason)


async def _existing(store: SessionStore, request: SessionRequest) -> SessionInfo | None:
    """The stored session ``request`` continues (forked when asked), or None when a new one is to be made."""
    if request.session_id is not None:
        try:
            return await store.get(request.session_id)
        except SessionNotFoundError:
            return None
    source: SessionInfo | None = None
    if request.resume is not None:
        source = await store.get(request.resume)
    elif request.continue_latest:
        source = await store.latest()
    if source is None:
        return None
    return await store.fork(source.id) if request.fork else source
