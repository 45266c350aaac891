"""RedisExecutionLog: each session's execution log as a bounded Redis list of the JSON Lines log's entries."""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, cast

from ironhive.adapters.sessions.execution_log import ExecutionEntries
from ironhive.adapters.sessions.redis_connection import RedisKeys
from ironhive.ports.chat import JsonValue
from ironhive.ports.system import Clock

if TYPE_CHECKING:
    from redis.asyncio import Redis

EXECUTION_LOG_LIMIT = 1000
"""A session's execution log keeps its newest this many entries."""


class RedisExecutionLog(ExecutionEntries):
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
        if limit < 1:
            raise ValueError(f"An execution log must keep at least one entry, not {limit}")
        super().__init__(clock=clock)
        self._client = client
        self._keys = RedisKeys(project_key)
        self._limit = limit

    async def entries(self, session_id: str) -> builtins.list[dict[str, JsonValue]]:
        """The session's kept entries, oldest first."""
        lines = await self._client.lrange(self._keys.execution_log(session_id), 0, -1)
        return [cast(dict[str, JsonValue], json.loads(line)) for line in lines]

    async def _write_line(self, session_id: str, line: str) -> None:
        key = self._keys.execution_log(session_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, line)
            pipe.ltrim(key, -self._limit, -1)
            await pipe.execute()
