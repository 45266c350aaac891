"""RedisEventLog: each session's events in a Redis stream that every ``serve`` front and worker shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ironhive.adapters.serve.hub import LoggedEvent
from ironhive.adapters.serve.redis_keys import TurnKeys, stream_id, text

if TYPE_CHECKING:
    from redis.asyncio import Redis

EVENT_FIELD = "e"
"""The stream entry field holding the serialized event."""

READ_BATCH = 1000
"""Most events one ``read_after`` returns (the caller asks again after the last)."""


class RedisEventLog:
    """One stream per session (``<prefix>:events:<session>``), trimmed to about ``limit`` entries (``MAXLEN ~``).

    Event ids are the stream ids, so they increase within a session and any front can resume any client from the id
    its ``Last-Event-ID`` names. An id that is not a stream id (a client's garbage) reads from the oldest event kept,
    as does an id older than everything kept.

    Args:
        redis: The client (owned by the caller, who closes it).
        limit: About how many events each session keeps (Redis trims whole nodes, so a few more may stay).
        keys: The key names.
    """

    def __init__(self, redis: Redis, *, limit: int, keys: TurnKeys | None = None) -> None:
        if limit < 1:
            raise ValueError("limit must be positive")
        self._redis = redis
        self._limit = limit
        self._keys = keys or TurnKeys()

    @property
    def limit(self) -> int:
        """About how many events each session keeps."""
        return self._limit

    async def append(self, session_id: str, line: str) -> str:
        """Add one serialized event at the end of the session's stream; returns its stream id."""
        added = await self._redis.xadd(
            self._keys.events(session_id), {EVENT_FIELD: line}, maxlen=self._limit, approximate=True
        )
        return text(added)

    async def read_after(self, session_id: str, after: str | None, *, wait_seconds: float) -> Sequence[LoggedEvent]:
        """The session's events after ``after`` (from the oldest kept when ``None``, unreadable or no longer kept).

        Blocks up to ``wait_seconds`` (``XREAD BLOCK``) when there is none yet; returns at most
        :data:`READ_BATCH` events.
        """
        start = stream_id(after) or "0-0"
        block = round(wait_seconds * 1000) if wait_seconds > 0 else None
        if block == 0:
            block = 1  # BLOCK 0 would wait forever
        reply: Any = await self._redis.xread({self._keys.events(session_id): start}, count=READ_BATCH, block=block)
        events: list[LoggedEvent] = []
        for _stream, entries in reply or ():
            for entry_id, fields in entries:
                line = fields.get(EVENT_FIELD.encode(), fields.get(EVENT_FIELD))
                if line is not None:
                    events.append(LoggedEvent(id=text(entry_id), line=text(line)))
        return events

    async def forget(self, session_id: str) -> None:
        """Delete the session's stream."""
        await self._redis.delete(self._keys.events(session_id))
