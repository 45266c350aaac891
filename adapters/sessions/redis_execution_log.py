"""RedisExecutionLog: each session's execution log as a bounded Redis list of the JSON Lines log's entries."""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, cast

from ironhive.adapters.config.masking import mask_urls, mask_value
from ironhive.adapters.sessions.codec import round_trip_time
from ironhive.adapters.sessions.execution_log import PROMPT_LIMIT
from ironhive.adapters.sessions.redis_connection import RedisKeys
from ironhive.ports.chat import JsonValue
from ironhive.ports.sessions import ToolArguments
from ironhive.ports.system import Clock

if TYPE_CHECKING:
    from redis.asyncio import Redis

EXECUTION_LOG_LIMIT = 1000
"""A session's execution log keeps its newest this many entries."""


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
