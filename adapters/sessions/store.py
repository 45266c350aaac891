"""DiskCacheSessionStore: one project's sessions in a diskcache (SQLite) store under ``<base>/projects/<hash>/``."""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import NoReturn, Protocol, TypeVar

from ironhive.adapters.config.private_files import make_private_directory, open_private, restrict_file
from ironhive.adapters.sessions.codec import SessionDataError, decode_turn, encode_turn, load_json
from ironhive.domain.errors import SessionNotFoundError
from ironhive.ports.chat import ChatMessage, JsonValue, Role
from ironhive.ports.sessions import FIRST_MESSAGE_LIMIT, EndReason, SessionInfo, SessionStatus
from ironhive.ports.system import Clock, IdGenerator

_SESSION_PREFIX = "session/"
_TURN_PREFIX = "turn/"
# Every write bumps this counter inside its transaction, so "most recently written" holds even when clocks tie.
_WRITES_KEY = "writes"
_DATABASE_FILE = "cache.db"  # diskcache's SQLite file inside the cache folder
_JOURNAL_SUFFIXES = ("-wal", "-shm", "-journal")
_RECORD_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ID_ATTEMPTS = 5
_STATUS_BY_REASON: dict[str, SessionStatus] = {
    "user_exit": "ended",
    "completed": "ended",
    "error": "error",
    "forked": "forked",
}
_T = TypeVar("_T")


class _Cache(Protocol):
    """The part of ``diskcache.Cache`` this store uses (diskcache ships no type information)."""

    def get(self, key: str, default: object = None) -> object: ...

    def set(self, key: str, value: object) -> bool: ...

    def delete(self, key: str) -> bool: ...

    def incr(self, key: str, delta: int = 1, default: int = 0) -> int: ...

    def transact(self, retry: bool = False) -> AbstractContextManager[object]: ...

    def iterkeys(self, reverse: bool = False) -> Iterator[object]: ...

    def close(self) -> None: ...


def project_hash(project_path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of the lower-cased resolved project path."""
    text = str(project_path.resolve()).lower()
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def project_directory(base_dir: Path, project_path: Path) -> Path:
    """The folder holding the sessions of ``project_path``: ``<base_dir>/projects/<project_hash>``."""
    return base_dir / "projects" / project_hash(project_path)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Record:
    """A session's stored record: its listing entry plus what the store needs to find its turns."""

    info: SessionInfo
    project_path: str
    end_reason: EndReason | None
    turns: int
    written: int

    def encode(self) -> str:
        info = self.info
        document: dict[str, JsonValue] = {
            "v": _RECORD_VERSION,
            "id": info.id,
            "model": info.model,
            "project_path": self.project_path,
            "status": info.status,
            "end_reason": self.end_reason,
            "created": info.created.isoformat(),
            "updated": info.updated.isoformat(),
            "message_count": info.message_count,
            "first_message": info.first_message,
            "forked_from": info.forked_from,
            "turns": self.turns,
            "written": self.written,
        }
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> _Record:
        document = load_json(text)
        if not isinstance(document, dict) or document.get("v") != _RECORD_VERSION:
            raise SessionDataError("Stored session record has an unsupported format")
        try:
            end_reason = _end_reason(document["end_reason"])
            info = SessionInfo(
                id=str(document["id"]),
                status="active" if end_reason is None else _STATUS_BY_REASON[end_reason],
                model=str(document["model"]),
                created=datetime.fromisoformat(str(document["created"])),
                updated=datetime.fromisoformat(str(document["updated"])),
                message_count=_integer(document["message_count"]),
                first_message=_optional_text(document["first_message"]),
                forked_from=_optional_text(document["forked_from"]),
            )
            return cls(
                info=info,
                project_path=str(document["project_path"]),
                end_reason=end_reason,
                turns=_integer(document["turns"]),
                written=_integer(document["written"]),
            )
        except (KeyError, ValueError) as error:
            raise SessionDataError(f"Stored session record is malformed: {error}") from None


class DiskCacheSessionStore:
    """The sessions of one project, in a diskcache (SQLite, process-safe) store.

    Each turn is its own key, written in one transaction together with the session record, so a process killed at
    any moment loses at most the turn it was writing and several processes can write different sessions at once.
    Every operation opens the cache in a worker thread and closes it there: nothing blocks the event loop and no
    connection outlives its call.

    Args:
        base_dir: The ironhive folder (``~/.ironhive``).
        project_path: The project the sessions belong to; its path picks the folder.
        clock: Times of creation and writes (the system clock by default).
        ids: The random part of new session ids (random UUIDs by default).
    """

    def __init__(
        self, base_dir: Path, project_path: Path, *, clock: Clock | None = None, ids: IdGenerator | None = None
    ) -> None:
        from ironhive.adapters.system import SystemClock, UuidIdGenerator

        self._project_path = str(project_path.resolve())
        self._directory = project_directory(base_dir, project_path)
        self._clock: Clock = clock or SystemClock()
        self._ids: IdGenerator = ids or UuidIdGenerator()
        self._private = False

    @property
    def directory(self) -> Path:
        """The folder of this project's store."""
        return self._directory

    async def create(self, model: str, session_id: str | None = None) -> SessionInfo:
        """Start a new, empty session (status ``active``), under ``session_id`` when given."""
        for _ in range(1 if session_id else _ID_ATTEMPTS):
            now = self._now()
            info = SessionInfo(
                id=session_id or self._new_session_id(now), status="active", model=model, created=now, updated=now
            )
            if await self._run(partial(self._insert, info=info), if_missing=None):
                return info
        if session_id:
            raise SessionDataError(f"A session with the id {session_id} already exists")
        raise SessionDataError(f"Could not find a free session id in {_ID_ATTEMPTS} attempts")

    async def new_id(self) -> str:
        """A fresh sortable session id (``<ms hex>-<8 hex>``) for a session not created yet; nothing is stored."""
        return self._new_session_id(self._now())

    async def append_turn(self, session_id: str, messages: Sequence[ChatMessage]) -> None:
        """Store one turn's messages and the updated session record in one transaction."""
        payload = encode_turn(messages)
        counted = _count_messages(messages)
        first = _first_user_text(messages)
        now = self._now()

        def write(cache: _Cache) -> None:
            with cache.transact(retry=True):
                record = _read(cache, session_id)
                cache.set(_turn_key(session_id, record.turns), payload)
                info = replace(
                    record.info,
                    updated=now,
                    message_count=record.info.message_count + counted,
                    first_message=record.info.first_message if record.info.first_message is not None else first,
                )
                _write(cache, replace(record, info=info, turns=record.turns + 1))

        await self._run(write, if_missing=partial(_not_found, session_id))

    async def load_messages(self, session_id: str) -> tuple[ChatMessage, ...]:
        """The whole stored conversation, oldest message first."""

        def load(cache: _Cache) -> tuple[ChatMessage, ...]:
            record = _read(cache, session_id)
            messages: list[ChatMessage] = []
            for index in range(record.turns):
                payload = cache.get(_turn_key(session_id, index))
                if not isinstance(payload, str):
                    # Turns leave only with their record: the session was deleted while we read it.
                    raise SessionNotFoundError(f"Session not found: {session_id}")
                messages.extend(decode_turn(payload))
            return tuple(messages)

        return await self._run(load, if_missing=partial(_not_found, session_id))

    async def end(self, session_id: str, reason: EndReason) -> None:
        """Mark the session ended; ``user_exit``/``completed`` → ``ended``, ``error`` → ``error``, ``forked``."""
        status = _STATUS_BY_REASON.get(reason)
        if status is None:
            raise ValueError(f"Unknown session end reason: {reason!r}")
        now = self._now()

        def write(cache: _Cache) -> None:
            with cache.transact(retry=True):
                record = _read(cache, session_id)
                _write(cache, replace(record, info=replace(record.info, status=status, updated=now), end_reason=reason))

        await self._run(write, if_missing=partial(_not_found, session_id))

    async def latest(self) -> SessionInfo | None:
        """The session written most recently, or ``None``."""
        records = await self._run(_records, if_missing=_no_records)
        return max(records, key=lambda record: record.written).info if records else None

    async def list(self, limit: int) -> builtins.list[SessionInfo]:
        """At most ``limit`` sessions, newest first by creation (then by id)."""
        if limit <= 0:
            return []
        records = await self._run(_records, if_missing=_no_records)
        records.sort(key=lambda record: (record.info.created, record.info.id), reverse=True)
        return [record.info for record in records[:limit]]

    async def delete(self, session_id: str) -> bool:
        """Remove a session and all its turns; ``False`` when it did not exist."""

        def remove(cache: _Cache) -> bool:
            with cache.transact(retry=True):
                try:
                    record = _read(cache, session_id)
                except SessionNotFoundError:
                    return False
                for index in range(record.turns):
                    cache.delete(_turn_key(session_id, index))
                cache.delete(_session_key(session_id))
                return True

        return await self._run(remove, if_missing=lambda: False)

    async def fork(self, session_id: str) -> SessionInfo:
        """Copy the session into a new one and end the original with reason ``forked``."""
        for _ in range(_ID_ATTEMPTS):
            now = self._now()
            new_id = self._new_session_id(now)
            forked = await self._run(
                partial(self._copy, source_id=session_id, new_id=new_id, now=now),
                if_missing=partial(_not_found, session_id),
            )
            if forked is not None:
                return forked
        raise SessionDataError(f"Could not find a free session id in {_ID_ATTEMPTS} attempts")

    async def get(self, session_id: str) -> SessionInfo:
        """One session's listing entry."""
        record = await self._run(partial(_read, session_id=session_id), if_missing=partial(_not_found, session_id))
        return record.info

    def _insert(self, cache: _Cache, info: SessionInfo) -> bool:
        with cache.transact(retry=True):
            if cache.get(_session_key(info.id)) is not None:
                return False
            _write(cache, _Record(info=info, project_path=self._project_path, end_reason=None, turns=0, written=0))
            return True

    def _copy(self, cache: _Cache, source_id: str, new_id: str, now: datetime) -> SessionInfo | None:
        with cache.transact(retry=True):
            source = _read(cache, source_id)
            if cache.get(_session_key(new_id)) is not None:
                return None
            for index in range(source.turns):
                payload = cache.get(_turn_key(source_id, index))
                if not isinstance(payload, str):
                    raise SessionDataError(f"Session {source_id} lacks its turn {index}")
                cache.set(_turn_key(new_id, index), payload)
            info = replace(source.info, id=new_id, status="active", created=now, updated=now, forked_from=source_id)
            _write(cache, replace(source, info=info, end_reason=None, project_path=self._project_path))
            ended = replace(source.info, status="forked", updated=now)
            _write(cache, replace(source, info=ended, end_reason="forked"))
            return info

    async def _run(self, operation: Callable[[_Cache], _T], *, if_missing: Callable[[], _T] | None) -> _T:
        """Run ``operation`` on the opened cache in a worker thread.

        Args:
            operation: What to do with the cache.
            if_missing: The answer when the project has no store yet (reading must not create one); ``None`` to
                create the store.
        """
        return await asyncio.to_thread(self._with_cache, operation, if_missing)

    def _with_cache(self, operation: Callable[[_Cache], _T], if_missing: Callable[[], _T] | None) -> _T:
        database = self._directory / _DATABASE_FILE
        if if_missing is not None and not database.is_file():
            return if_missing()
        self._make_private(database)
        import diskcache  # type: ignore[import-untyped]

        # eviction_policy "none": a cache that culls would silently delete sessions. A huge disk_min_file_size keeps
        # every value inside SQLite, so a turn is written by the transaction itself, never by a side file.
        cache: _Cache = diskcache.Cache(
            str(self._directory), timeout=60, eviction_policy="none", disk_min_file_size=2**30
        )
        try:
            return operation(cache)
        finally:
            cache.close()

    def _make_private(self, database: Path) -> None:
        """Create the folders 0700 and the database 0600 before diskcache does (it would use 0755 and 0644).

        SQLite gives its journal files (``-wal``, ``-shm``) the database's mode, so they are owner-only too. Once per
        store, a database (or journal) left readable by others by an earlier version is restricted.
        """
        if self._private:
            return
        make_private_directory(self._directory)
        os.close(open_private(database, os.O_RDONLY))
        for suffix in _JOURNAL_SUFFIXES:
            restrict_file(database.with_name(database.name + suffix))
        self._private = True

    def _now(self) -> datetime:
        return utc_now(self._clock)

    def _new_session_id(self, now: datetime) -> str:
        return new_session_id(now, self._ids)


def utc_now(clock: Clock) -> datetime:
    """The clock's time in UTC (a naive time is taken as UTC)."""
    now = clock.now()
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


def new_session_id(now: datetime, ids: IdGenerator) -> str:
    """A sortable session id: ``<unix milliseconds in hex>-<8 hex>``."""
    milliseconds = (now - _EPOCH) // timedelta(milliseconds=1)
    # The last 8 hex digits: random in a UUID4, and still distinct when a test generator counts upwards.
    return f"{milliseconds:x}-{ids.new_id()[-8:]}"


def _not_found(session_id: str) -> NoReturn:
    raise SessionNotFoundError(f"Session not found: {session_id}")


def _session_key(session_id: str) -> str:
    return _SESSION_PREFIX + session_id


def _turn_key(session_id: str, index: int) -> str:
    return f"{_TURN_PREFIX}{session_id}/{index:08d}"


def _read(cache: _Cache, session_id: str) -> _Record:
    text = cache.get(_session_key(session_id))
    if not isinstance(text, str):
        raise SessionNotFoundError(f"Session not found: {session_id}")
    return _Record.decode(text)


def _write(cache: _Cache, record: _Record) -> None:
    written = cache.incr(_WRITES_KEY)
    cache.set(_session_key(record.info.id), replace(record, written=written).encode())


def _records(cache: _Cache) -> builtins.list[_Record]:
    records: builtins.list[_Record] = []
    # Keys come in sort order and every session key shares one prefix: stop at the first key past them.
    for key in cache.iterkeys():
        if not isinstance(key, str) or not key.startswith(_SESSION_PREFIX):
            if isinstance(key, str) and key > _SESSION_PREFIX:
                break
            continue
        text = cache.get(key)
        if isinstance(text, str):  # None when deleted after the keys were read
            records.append(_Record.decode(text))
    return records


def _no_records() -> builtins.list[_Record]:
    return []


def _count_messages(messages: Sequence[ChatMessage]) -> int:
    # Mirrors the original's user_message/assistant_message entries: an assistant round of tool calls only is not one.
    return sum(
        1 for message in messages if message.role is Role.USER or (message.role is Role.ASSISTANT and message.text)
    )


def _first_user_text(messages: Sequence[ChatMessage]) -> str | None:
    for message in messages:
        if message.role is Role.USER and message.text:
            return message.text[:FIRST_MESSAGE_LIMIT]
    return None


def _integer(value: JsonValue) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _optional_text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def _end_reason(value: JsonValue) -> EndReason | None:
    match value:
        case "user_exit" | "completed" | "error" | "forked":
            return value
    return None
