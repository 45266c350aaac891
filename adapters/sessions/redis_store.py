"""RedisSessionStore and RedisExecutionLog: one project's sessions and execution logs in Redis (redis-py asyncio)."""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ironhive.adapters.config.masking import mask_urls, mask_value
from ironhive.adapters.sessions.codec import SessionDataError, decode_turn, encode_turn, round_trip_time
from ironhive.adapters.sessions.execution_log import PROMPT_LIMIT
from ironhive.adapters.sessions.store import (
    _STATUS_BY_REASON,
    _count_messages,
    _end_reason,
    _first_user_text,
    project_hash,
)
from ironhive.domain.errors import ConfigurationError, SessionNotFoundError
from ironhive.ports.chat import ChatMessage, JsonValue
from ironhive.ports.sessions import EndReason, SessionInfo, ToolArguments
from ironhive.ports.system import Clock, IdGenerator

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import Pipeline

RECORD_VERSION = "1"
"""The ``v`` field of every session hash; a reader refuses other versions."""
CONNECT_TIMEOUT_SECONDS = 5.0
"""How long ``open_redis`` waits for the server to answer."""
EXECUTION_LOG_LIMIT = 1000
"""A session's execution log keeps its newest this many entries."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ID_ATTEMPTS = 5
_PROJECT_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")

# Every write bumps the project's write counter inside its script, so "written most recently" holds when clocks tie.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[5], KEYS[6])
local written = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], 'written', written, unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], written, ARGV[1])
return 1
"""
# Returns 0 when the session is missing, 2 when the turn id (ARGV[7], if any) is already recorded, 1 when appended.
_APPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[7] ~= '' then
  if redis.call('SISMEMBER', KEYS[5], ARGV[7]) == 1 then return 2 end
  redis.call('SADD', KEYS[5], ARGV[7])
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'message_count', ARGV[3])
if ARGV[5] == '1' then redis.call('HSETNX', KEYS[1], 'first_message', ARGV[6]) end
local written = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], 'updated', ARGV[4], 'written', written)
redis.call('ZADD', KEYS[3], written, ARGV[1])
return 1
"""
_END = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local written = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], 'end_reason', ARGV[2], 'updated', ARGV[3], 'written', written)
redis.call('ZADD', KEYS[2], written, ARGV[1])
return 1
"""
_DELETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
return 1
"""
# Returns 0 when the source is missing, 1 when the new id is taken, else the new session's hash as a flat list.
_FORK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 1 end
redis.call('DEL', KEYS[4], KEYS[8])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('COPY', KEYS[2], KEYS[4]) end
redis.call('HSET', KEYS[3], unpack(redis.call('HGETALL', KEYS[1])))
redis.call('HDEL', KEYS[3], 'end_reason')
local copied = redis.call('INCR', KEYS[7])
redis.call('HSET', KEYS[3], 'id', ARGV[2], 'created', ARGV[3], 'updated', ARGV[3], 'forked_from', ARGV[1],
  'project_path', ARGV[5], 'written', copied)
redis.call('ZADD', KEYS[5], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[6], copied, ARGV[2])
local ended = redis.call('INCR', KEYS[7])
redis.call('HSET', KEYS[1], 'end_reason', 'forked', 'updated', ARGV[3], 'written', ended)
redis.call('ZADD', KEYS[6], ended, ARGV[1])
return redis.call('HGETALL', KEYS[3])
"""


async def open_redis(url: str) -> Redis:
    """A connected redis-py asyncio client for ``url`` (``redis://``, ``rediss://`` or ``unix://``).

    The client decodes replies to ``str`` (``decode_responses=True``); close it with ``await client.aclose()``.

    Raises:
        ConfigurationError: The URL is not a Redis URL or the server does not answer (the message names the URL with
            its password masked).
    """
    import redis.asyncio
    from redis.exceptions import RedisError

    shown = mask_urls(url) if "://" in url else url
    try:
        client = redis.asyncio.from_url(url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS)
    except ValueError as error:
        raise ConfigurationError(f"Not a Redis URL: {shown} ({mask_urls(str(error))})") from None
    try:
        await client.ping()
    except (RedisError, OSError) as error:
        await client.aclose()
        reason = mask_urls(str(error)) or type(error).__name__
        raise ConfigurationError(f"Cannot connect to Redis at {shown}: {reason}") from None
    return client


def project_key_for(project_path: Path) -> str:
    """The key of ``project_path``'s sessions: the same hash that names the diskcache store's folder."""
    return project_hash(project_path)


class RedisKeys:
    """The key names of one project's data; every key holds the project key as a Redis Cluster hash tag.

    ``{project_key}`` is written with its braces, so all of a project's keys live in one slot and a transaction or
    script may touch any of them. The session id is always the last part of a key, after a fixed kind, so no session
    id (whatever characters it holds) can name another session's key or another kind of key.
    """

    def __init__(self, project_key: str) -> None:
        if not _PROJECT_KEY.fullmatch(project_key):
            raise ValueError(f"Not a usable project key: {project_key!r}")
        self.prefix = f"ironhive:{{{project_key}}}:"

    def of(self, kind: str, session_id: str) -> str:
        """``ironhive:{<project>}:<kind>:<session id>``: the key of one kind of per-session data."""
        return f"{self.prefix}{kind}:{session_id}"

    def session(self, session_id: str) -> str:
        """The session's hash (its listing entry)."""
        return self.of("session", session_id)

    def messages(self, session_id: str) -> str:
        """The session's list of turns, each one ``encode_turn`` document, oldest first."""
        return self.of("messages", session_id)

    def turn_ids(self, session_id: str) -> str:
        """The set of turn ids ``append_turn_once`` recorded for the session."""
        return self.of("turn-ids", session_id)

    def execution_log(self, session_id: str) -> str:
        """The session's execution log: a list of JSON entries, the newest ``EXECUTION_LOG_LIMIT`` kept."""
        return self.of("execlog", session_id)

    @property
    def by_creation(self) -> str:
        """The sorted set of session ids scored by creation time (microseconds since the epoch)."""
        return self.prefix + "sessions"

    @property
    def by_write(self) -> str:
        """The sorted set of session ids scored by their last write's number."""
        return self.prefix + "recent"

    @property
    def writes(self) -> str:
        """The counter every write increments."""
        return self.prefix + "writes"


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
        self._create = client.register_script(_CREATE)
        self._append = client.register_script(_APPEND)
        self._end = client.register_script(_END)
        self._delete = client.register_script(_DELETE)
        self._fork = client.register_script(_FORK)

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
                done marker); they run exactly when the messages are appended.

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
        while True:
            newest = await self._client.zrevrange(self.keys.by_write, 0, 0)
            if not newest:
                return None
            try:
                return await self.get(str(newest[0]))
            except SessionNotFoundError:
                continue  # deleted between the two reads: the next newest counts

    async def list(self, limit: int) -> builtins.list[SessionInfo]:
        """At most ``limit`` sessions, newest first by creation (then by id)."""
        if limit <= 0:
            return []
        ids = await self._client.zrevrange(self.keys.by_creation, 0, limit - 1)
        async with self._client.pipeline(transaction=False) as pipe:
            for session_id in ids:
                pipe.hgetall(self.keys.session(str(session_id)))
            hashes = await pipe.execute()
        return [_decode_info(fields) for fields in hashes if fields]  # empty: deleted after the ids were read

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
        now = self._clock.now()
        return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)

    def _new_session_id(self, now: datetime) -> str:
        milliseconds = (now - _EPOCH) // timedelta(milliseconds=1)
        # As the diskcache store: the last 8 hex digits are random in a UUID4 and distinct when a test counts upwards.
        return f"{milliseconds:x}-{self._ids.new_id()[-8:]}"


class RedisExecutionLog:
    """Each session's execution log as a Redis list of JSON entries, bounded to the newest ``limit``.

    The entries are the lines the JSON Lines log writes (camelCase, secrets masked the same way, prompts cut to
    ``PROMPT_LIMIT``); each append and its trim run in one transaction. The key is ``P execlog:<id>``.

    Args:
        client: A redis-py asyncio client that decodes replies (see :func:`open_redis`).
        project_key: The project's key (:func:`project_key_for` of its path).
        clock: The time stamped on each entry (the system clock by default).
        limit: How many entries each session keeps.
    """

    def __init__(
        self, client: Redis, *, project_key: str, clock: Clock | None = None, limit: int = EXECUTION_LOG_LIMIT
    ) -> None:
        from ironhive.adapters.system import SystemClock

        if limit < 1:
            raise ValueError(f"An execution log must keep at least one entry, not {limit}")
        self._client = client
        self._keys = RedisKeys(project_key)
        self._clock: Clock = clock or SystemClock()
        self._limit = limit

    async def turn_start(self, session_id: str, turn: int, prompt: str) -> None:
        """Append ``{"type":"turn_start","turn","prompt","timestamp"}`` (URL credentials masked, cut to 500 chars)."""
        await self._append(session_id, {"type": "turn_start", "turn": turn, "prompt": mask_urls(prompt)[:PROMPT_LIMIT]})

    async def tool_call(
        self, session_id: str, turn: int, step: int, call_id: str, tool: str, arguments: ToolArguments
    ) -> None:
        """Append ``{"type":"tool_call","turn","step","id","tool","arguments","timestamp"}`` (secrets masked)."""
        encoded: JsonValue
        if arguments is None:
            encoded = None
        elif isinstance(arguments, str):
            encoded = mask_urls(arguments)
        else:
            encoded = mask_value("arguments", dict(arguments))
        await self._append(
            session_id,
            {"type": "tool_call", "turn": turn, "step": step, "id": call_id, "tool": tool, "arguments": encoded},
        )

    async def turn_end(
        self,
        session_id: str,
        turn: int,
        *,
        response_length: int,
        tool_calls: int,
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> None:
        """Append a ``turn_end`` entry: type, turn, responseLength, toolCalls, inputTokens, outputTokens, timestamp."""
        await self._append(
            session_id,
            {
                "type": "turn_end",
                "turn": turn,
                "responseLength": response_length,
                "toolCalls": tool_calls,
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
            },
        )

    async def entries(self, session_id: str) -> builtins.list[dict[str, JsonValue]]:
        """The session's kept entries, oldest first."""
        lines = await self._client.lrange(self._keys.execution_log(session_id), 0, -1)
        return [cast(dict[str, JsonValue], json.loads(line)) for line in lines]

    async def _append(self, session_id: str, fields: dict[str, JsonValue]) -> None:
        fields["timestamp"] = round_trip_time(self._clock.now())
        key = self._keys.execution_log(session_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, json.dumps(fields, ensure_ascii=False, separators=(",", ":")))
            pipe.ltrim(key, -self._limit, -1)
            await pipe.execute()


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
