"""A blocking read on a client from open_redis waits as long as it asks, past redis-py's default socket timeout."""

from __future__ import annotations

from ironhive.adapters.serve.redis_log import RedisEventLog
from ironhive.adapters.sessions.redis_connection import open_redis
from tests.support.redis_server import redis_server

WAIT_SECONDS = 6.0
"""Longer than redis-py 8's default 5 s socket timeout, shorter than serve's 15 s heartbeat."""


async def test_an_idle_event_stream_waits_its_whole_heartbeat_period() -> None:
    with redis_server() as server:
        client = await open_redis(server.url)
        try:
            log = RedisEventLog(client, limit=100)
            assert await log.read_after("1a23d41fdb4-46bbafed", None, wait_seconds=WAIT_SECONDS) == []
            await log.append("1a23d41fdb4-46bbafed", '{"type":"turn_end"}')
            assert [event.line for event in await log.read_after("1a23d41fdb4-46bbafed", None, wait_seconds=1)] == [
                '{"type":"turn_end"}'
            ]
        finally:
            await client.aclose()
