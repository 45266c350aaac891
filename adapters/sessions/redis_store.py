"""RedisSessionStore: one project's sessions in Redis (redis-py asyncio); with its execution log and connection."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ironhive.adapters.sessions import redis_scripts as scripts
from ironhive.adapters.sessions.codec import SessionDataError, decode_turn, encode_turn
from ironhive.adapters.sessions.redis_connection import CONNECT_TIMEOUT_SECONDS, RedisKeys, open_redis, project_key_for
from ironhive.adapters.sessions.redis_execution_log import EXECUTION_LOG_LIMIT, RedisExecutionLog

# The diskcache store's own readings of reasons, counts and first messages, so both stores agree by construction.
from ironhive.adapters.sessions.store import (
    _STATUS_BY_REASON,
    _count_messages,
    _end_reason,
    _first_user_text,
    new_session_id,
    utc_now,
)
from ironhive.domain.errors import SessionNotFoundError
from ironhive.ports.chat import ChatMessage
from ironhive.ports.sessions import EndReason, SessionInfo
from ironhive.ports.system import Clock, IdGenerator

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import Pipeline

RECORD_VERSION = "1"
"""The ``v`` field of every session hash; a reader refuses other versions."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ID_ATTEMPTS = 5
_PAGE = 8  # ids read at once when records may be missing


class RedisSessionStore:
    """The sessions of one project in Redis, shared by every ``serve`` front and ``worker`` that opens them.

    Behaves as the diskcache store does (ids, statuses, listing order, counts, fork, errors); every write is one Lua
    script, so it is atomic and a crash loses at most the write under way. Keys (see :class:`RedisKeys`; ``P`` is
    ``ironhive:{<project key>}:``):

    - ``P session:<id>``: hash of the listing entry (``v``, ``id``, ``model``, ``project_path``, ``created``,
      ``updated``, ``message_count``, ``written``; ``first_message``, ``forked_from`` and ``end_reason`` only when set);
    - ``P messages:<id>``: list of turns, each an ``encode_turn`` JSON document;
    - ``P turn-ids:<id>``: set of the turn ids ``append_turn_once`` recorded;
    - ``P execlog:<id>``: the :class:`RedisExecutionLog` list (``delete`` drops it with the session);
    - ``P sessions`` / ``P recent``: sorted sets of ids by creation time / by last write; ``P writes``: the counter.

    Other kinds of per-session keys (``keys.of("<kind>", id)``) are free for the caller, e.g. the worker's event
    streams and done markers; they share the slot, so ``append_turn_once``'s ``also`` may write them atomically.

    Args:
        client: A redis-py asyncio client that decodes replies (see :func:`open_redis`).
        project_key: The project's key (:func:`project_key_for` of its path).
        project_path: The project's path, recorded with each session as the diskcache store does.
        clock: Times of creation and writes (the system clock by default).
        ids: The random part of new session ids (random UUIDs by default).
    """

    def __init__(
        self,
        client: Redis,
        *,
        project_key: str,
        project_path: str = "",
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
    ) -> None:
        from ironhive.adapters.system import SystemClock, UuidIdGenerator

        self._client = client
        self.keys = RedisKeys(project_key)
        self._project_path = project_path
        self._clock: Clock = clock or SystemClock()
        self._ids: IdGenerator = ids or UuidIdGenerator()
        self._create = client.register_script(scripts.CREATE)
        self._append = client.register_script(scripts.APPEND)
        self._end = client.register_script(scripts.END)
        self._delete = client.register_script(scripts.DELETE)
        self._fork = client.register_script(scripts.FORK)

    @classmethod
    def for_project(
        cls, client: Redis, project_path: Path, *, clock: Clock | None = None, ids: IdGenerator | None = None
    ) -> RedisSessionStore:
        """The store of ``project_path``'s sessions (keyed as the diskcache store names its folder)."""
        return cls(
            client,
            project_key=project_key_for(project_path),
            project_path=str(project_path.resolve()),
            clock=clock,
            ids=ids,
        )

    async def create(self, model: str, session_id: str | None = None) -> SessionInfo:
        """Start a new, empty session (status ``active``), under ``session_id`` when given."""
        for _ in range(1 if session_id else _ID_ATTEMPTS):
            now = self._now()
            info = SessionInfo(
                id=session_id or self._new_session_id(now), status="active", model=model, created=now, updated=now
            )
            fields = {
                "v": RECORD_VERSION,
                "id": info.id,
                "model": model,
                "project_path": self._project_path,
                "created": now.isoformat(),
                "updated": now.isoformat(),
                "message_count": "0",
            }
            keys = self.keys
            created = await self._create(
                keys=[
                    keys.session(info.id),
                    keys.by_creation,
                    keys.by_write,
                    keys.writes,
                    keys.messages(info.id),
                    keys.turn_ids(info.id),
                ],
                args=[info.id, _score(now), *(item for pair in fields.items() for item in pair)],
            )
            if created == 1:
                return info
        if session_id:
            raise SessionDataError(f"A session with the id {session_id} already exists")
        raise SessionDataError(f"Could not find a free session id in {_ID_ATTEMPTS} attempts")

    async def new_id(self) -> str:
        """A fresh sortable session id (``<ms hex>-<8 hex>``) for a session not created yet; nothing is stored."""
        return self._new_session_id(self._now())

    async def append_turn(self, session_id: str, messages: Sequence[ChatMessage]) -> None:
        """Store one turn's messages and the updated listing entry in one script."""
        if await self._append(**self._append_call(session_id, messages, turn_id="")) == 0:
            raise SessionNotFoundError(f"Session not found: {session_id}")

    async def append_turn_once(
        self,
        session_id: str,
        turn_id: str,
        messages: Sequence[ChatMessage],
        *,
        also: Callable[[Pipeline], None] | None = None,
    ) -> bool:
        """Append a turn's messages unless ``turn_id`` is already recorded for the session, all in one transaction.

        Args:
            session_id: The session to extend.
            turn_id: The turn's id; recorded in ``P turn-ids:<id>`` with the messages.
            messages: The turn's messages in order.
            also: Queues more commands on the transaction's pipeline (e.g. the XADD of the turn's last event, a
                done marker); they run exactly when the messages are appended. Redis does not roll a transaction
                back: a queued command that fails when it runs (a key of the wrong type) raises here but leaves the
                appended turn in place.

        Returns:
            ``True`` when appended; ``False`` (nothing written, ``also`` not run) when the turn was recorded before.

        Raises:
            SessionNotFoundError: No session has this id.
            ValueError: ``turn_id`` is empty.
        """
        if not turn_id:
            raise ValueError("A turn id must not be empty")
        call = self._append_call(session_id, messages, turn_id=turn_id)
        outcome: int
        if also is None:
            outcome = int(await self._append(**call))
        else:
            from redis.exceptions import WatchError

            session_key, turns_key = self.keys.session(session_id), self.keys.turn_ids(session_id)
            async with self._client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        # Watching both keys makes the check below hold until EXEC: either all of it runs or none.
                        await pipe.watch(session_key, turns_key)
                        if not await pipe.exists(session_key):
                            outcome = 0
                        elif await pipe.sismember(turns_key, turn_id):
                            outcome = 2
                        else:
                            pipe.multi()  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
                            await self._append(**call, client=pipe)
                            also(pipe)
                            outcome = int((await pipe.execute())[0])
                        break
                    except WatchError:
                        continue
                    finally:
                        await pipe.reset()  # type: ignore[no-untyped-call]
        if outcome == 0:
            raise SessionNotFoundError(f"Session not found: {session_id}")
        return outcome == 1

    async def load_messages(self, session_id: str) -> tuple[ChatMessage, ...]:
        """The whole stored conversation, oldest message first (read in one transaction)."""
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.exists(self.keys.session(session_id))
            pipe.lrange(self.keys.messages(session_id), 0, -1)
            exists, turns = await pipe.execute()
        if not exists:
            raise SessionNotFoundError(f"Session not found: {session_id}")
        messages: list[ChatMessage] = []
        for payload in turns:
            messages.extend(decode_turn(str(payload)))
        return tuple(messages)

    async def end(self, session_id: str, reason: EndReason) -> None:
        """Mark the session ended; ``user_exit``/``completed`` → ``ended``, ``error`` → ``error``, ``forked``."""
        if reason not in _STATUS_BY_REASON:
            raise ValueError(f"Unknown session end reason: {reason!r}")
        keys = self.keys
        ended = await self._end(
            keys=[keys.session(session_id), keys.by_write, keys.writes],
            args=[session_id, reason, self._now().isoformat()],
        )
        if ended == 0:
            raise SessionNotFoundError(f"Session not found: {session_id}")

    async def latest(self) -> SessionInfo | None:
        """The session written most recently, or ``None``."""
        newest = await self._newest(self.keys.by_write, 1)
        return newest[0] if newest else None

    async def list(self, limit: int) -> builtins.list[SessionInfo]:
        """At most ``limit`` sessions, newest first by creation (then by id)."""
        return await self._newest(self.keys.by_creation, limit)

    async def delete(self, session_id: str) -> bool:
        """Remove a session, its turns, its turn ids and its execution log; ``False`` when it did not exist."""
        keys = self.keys
        deleted = await self._delete(
            keys=[
                keys.session(session_id),
                keys.messages(session_id),
                keys.turn_ids(session_id),
                keys.execution_log(session_id),
                keys.by_creation,
                keys.by_write,
            ],
            args=[session_id],
        )
        return bool(deleted == 1)

    async def fork(self, session_id: str) -> SessionInfo:
        """Copy the session into a new one and end the original with reason ``forked``."""
        keys = self.keys
        for _ in range(_ID_ATTEMPTS):
            now = self._now()
            new_id = self._new_session_id(now)
            outcome = await self._fork(
                keys=[
                    keys.session(session_id),
                    keys.messages(session_id),
                    keys.session(new_id),
                    keys.messages(new_id),
                    keys.by_creation,
                    keys.by_write,
                    keys.writes,
                    keys.turn_ids(new_id),
                ],
                args=[session_id, new_id, now.isoformat(), _score(now), self._project_path],
            )
            if outcome == 0:
                raise SessionNotFoundError(f"Session not found: {session_id}")
            if isinstance(outcome, list):
                return _decode_info(dict(zip(outcome[::2], outcome[1::2], strict=True)))
        raise SessionDataError(f"Could not find a free session id in {_ID_ATTEMPTS} attempts")

    async def get(self, session_id: str) -> SessionInfo:
        """One session's listing entry."""
        fields = await self._client.hgetall(self.keys.session(session_id))
        if not fields:
            raise SessionNotFoundError(f"Session not found: {session_id}")
        return _decode_info(cast("dict[str, str]", fields))  # the client decodes replies (open_redis)

    async def _newest(self, index: str, limit: int) -> builtins.list[SessionInfo]:
        """The listing entries of the first ``limit`` sessions of ``index`` (highest score first).

        Ids whose record is gone are passed over: a session deleted between the two reads, or a record lost outside
        the store (an evicting ``maxmemory-policy``, a hand-made ``DEL``).
        """
        found: builtins.list[SessionInfo] = []
        start = 0
        while len(found) < limit:
            wanted = max(limit - len(found), _PAGE)
            ids = await self._client.zrevrange(index, start, start + wanted - 1)
            if not ids:
                break
            async with self._client.pipeline(transaction=False) as pipe:
                for session_id in ids:
                    pipe.hgetall(self.keys.session(str(session_id)))
                hashes = await pipe.execute()
            found.extend(_decode_info(fields) for fields in hashes if fields)
            start += wanted
        return found[: max(limit, 0)]

    def _append_call(self, session_id: str, messages: Sequence[ChatMessage], *, turn_id: str) -> dict[str, Any]:
        first = _first_user_text(messages)
        keys = self.keys
        return {
            "keys": [
                keys.session(session_id),
                keys.messages(session_id),
                keys.by_write,
                keys.writes,
                keys.turn_ids(session_id),
            ],
            "args": [
                session_id,
                encode_turn(messages),
                _count_messages(messages),
                self._now().isoformat(),
                "0" if first is None else "1",
                first or "",
                turn_id,
            ],
        }

    def _now(self) -> datetime:
        return utc_now(self._clock)

    def _new_session_id(self, now: datetime) -> str:
        return new_session_id(now, self._ids)


def _score(moment: datetime) -> int:
    """Microseconds since the epoch: exact in a sorted set's double up to the year 2255."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _decode_info(fields: Mapping[str, str]) -> SessionInfo:
    if fields.get("v") != RECORD_VERSION:
        raise SessionDataError("Stored session record has an unsupported format")
    try:
        reason = _end_reason(fields.get("end_reason"))
        return SessionInfo(
            id=fields["id"],
            status="active" if reason is None else _STATUS_BY_REASON[reason],
            model=fields["model"],
            created=datetime.fromisoformat(fields["created"]),
            updated=datetime.fromisoformat(fields["updated"]),
            message_count=int(fields["message_count"]),
            first_message=fields.get("first_message"),
            forked_from=fields.get("forked_from"),
        )
    except (KeyError, ValueError) as error:
        raise SessionDataError(f"Stored session record is malformed: {error}") from None


__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "EXECUTION_LOG_LIMIT",
    "RECORD_VERSION",
    "RedisExecutionLog",
    "RedisKeys",
    "RedisSessionStore",
    "open_redis",
    "project_key_for",
]
