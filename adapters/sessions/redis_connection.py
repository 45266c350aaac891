"""Connecting to Redis (redis-py asyncio, imported lazily) and the key names of a project's data there."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.config.masking import mask_urls
from ironhive.adapters.sessions.store import project_hash
from ironhive.domain.errors import ConfigurationError

if TYPE_CHECKING:
    from redis.asyncio import Redis

CONNECT_TIMEOUT_SECONDS = 5.0
"""How long ``open_redis`` waits for the server to answer."""

_PROJECT_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


async def open_redis(url: str, *, connect_timeout: float = CONNECT_TIMEOUT_SECONDS) -> Redis:
    """A connected redis-py asyncio client for ``url`` (``redis://``, ``rediss://`` or ``unix://``).

    The client decodes replies to ``str`` (``decode_responses=True``); close it with ``await client.aclose()``.
    Only connecting and the first ``PING`` are bounded by ``connect_timeout`` (seconds): later blocking reads
    (``XREADGROUP BLOCK``) may wait as long as they ask. A command is never sent twice: when the connection drops
    before its reply, it raises ``redis.exceptions.ConnectionError`` and the caller cannot know whether it ran (a
    resent script would append a turn twice or create a second session); ``append_turn_once`` may be retried safely.

    Raises:
        ConfigurationError: The URL is not a Redis URL, the server does not answer, or it evicts any key when memory
            runs out (an ``allkeys-*`` ``maxmemory-policy`` with a ``maxmemory``: sessions would vanish silently).
            The message names the URL with its password masked.
    """
    import redis.asyncio
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError

    shown = mask_urls(url) if "://" in url else url
    try:
        client = redis.asyncio.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=connect_timeout,
            # redis-py 8 reads with a 5 s timeout by default: an XREAD BLOCK for a 15 s heartbeat failed.
            socket_timeout=None,
            retry=Retry(NoBackoff(), 0),  # never send a write twice (see the docstring)
        )
    except ValueError as error:
        raise ConfigurationError(f"Not a Redis URL: {shown} ({mask_urls(str(error))})") from None
    try:
        async with asyncio.timeout(connect_timeout):  # a server that accepts but never answers
            await client.ping()
            memory = await client.info("memory")
    except (RedisError, OSError) as error:  # TimeoutError is an OSError
        await client.aclose()
        reason = mask_urls(str(error)) or type(error).__name__
        raise ConfigurationError(f"Cannot connect to Redis at {shown}: {reason}") from None
    policy = str(memory.get("maxmemory_policy", ""))
    if policy.startswith("allkeys-") and int(memory.get("maxmemory", 0) or 0) > 0:
        await client.aclose()
        raise ConfigurationError(
            f"Redis at {shown} evicts any key when its memory is full (maxmemory-policy {policy}), so stored "
            "sessions could vanish: use noeviction or a volatile-* policy, or no maxmemory"
        )
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
