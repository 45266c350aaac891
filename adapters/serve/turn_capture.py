"""CapturingStore: a session store for one turn on a worker that keeps the turn's history back for the finish."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from ironhive.ports.chat import ChatMessage
from ironhive.ports.sessions import EndReason, SessionInfo, SessionStore


class CapturingStore:
    """Passes every call to ``store`` except ``append_turn``, whose messages it keeps in :attr:`messages`.

    A worker finishes a turn in one transaction (history, ``turn_end``, done mark, ack), so the agent's own write of
    the turn's history is held back here and made by the finish.

    Args:
        store: The real store.
    """

    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self.messages: tuple[ChatMessage, ...] | None = None

    async def append_turn(self, session_id: str, messages: Sequence[ChatMessage]) -> None:
        """Keep the turn's messages (a turn records once; a second call replaces them)."""
        self.messages = tuple(messages)

    async def create(self, model: str, session_id: str | None = None) -> SessionInfo:
        """See :meth:`SessionStore.create`."""
        return await self._store.create(model, session_id)

    async def new_id(self) -> str:
        """See :meth:`SessionStore.new_id`."""
        return await self._store.new_id()

    async def load_messages(self, session_id: str) -> tuple[ChatMessage, ...]:
        """See :meth:`SessionStore.load_messages`."""
        return await self._store.load_messages(session_id)

    async def end(self, session_id: str, reason: EndReason) -> None:
        """See :meth:`SessionStore.end`."""
        await self._store.end(session_id, reason)

    async def latest(self) -> SessionInfo | None:
        """See :meth:`SessionStore.latest`."""
        return await self._store.latest()

    async def list(self, limit: int) -> builtins.list[SessionInfo]:
        """See :meth:`SessionStore.list`."""
        return await self._store.list(limit)

    async def delete(self, session_id: str) -> bool:
        """See :meth:`SessionStore.delete`."""
        return await self._store.delete(session_id)

    async def fork(self, session_id: str) -> SessionInfo:
        """See :meth:`SessionStore.fork`."""
        return await self._store.fork(session_id)

    async def get(self, session_id: str) -> SessionInfo:
        """See :meth:`SessionStore.get`."""
        return await self._store.get(session_id)
