"""Where ``ironhive serve`` keeps sessions and events and runs turns: in this process (the default) or on Redis."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from ironhive.adapters.config.schema import IronHiveConfig, ServerSection
from ironhive.adapters.serve.hub import EventLog, TurnHub
from ironhive.ports.sessions import SessionStore

MAX_LIVE_SESSIONS = 64
"""Sessions whose agents the embedded backend holds in memory at once (idle ones beyond are released)."""

MAX_LOGGED_SESSIONS = 1024
"""Session event logs the embedded backend keeps in memory (the least recently used beyond are dropped)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BackendRequest:
    """What a backend is built from.

    Attributes:
        config: The merged configuration (the agent's settings).
        server: The ``server`` section (the user's file and the flags only).
        project: The project (working) directory: its sessions, tools and permissions.
        provider: ``--provider``.
        model: ``-m``.
        approval_timeout_seconds: ``--approval-timeout`` (``approval.timeoutSeconds`` when None).
    """

    config: IronHiveConfig
    server: ServerSection
    project: Path
    provider: str | None
    model: str | None
    approval_timeout_seconds: float | None


@dataclass(frozen=True, slots=True)
class Backend:
    """The store, the event log and the turn hub the API serves.

    Attributes:
        store: The sessions.
        log: Each session's events.
        hub: Runs the turns.
    """

    store: SessionStore
    log: EventLog
    hub: TurnHub


@contextlib.asynccontextmanager
async def open_backend(request: BackendRequest) -> AsyncIterator[Backend]:
    """The backend ``server.redis`` (or ``--redis``) picks; when the block ends its turns are stopped and it closes.

    Raises:
        ConfigurationError: The backend cannot be used (Redis support missing or unreachable, a bad URL).
    """
    if request.server.redis:
        async with _open_redis(request) as backend:
            yield backend
        return
    async with _open_embedded(request) as backend:
        yield backend


@contextlib.asynccontextmanager
async def _open_embedded(request: BackendRequest) -> AsyncIterator[Backend]:
    from ironhive.adapters.serve.embedded_hub import EmbeddedTurnHub
    from ironhive.adapters.serve.memory_log import MemoryEventLog
    from ironhive.container import IronHiveContainer
    from ironhive.serve.runtime import open_plugin_tools, runtime_factory

    project = request.project.resolve()
    store = IronHiveContainer().override(working_directory=project).session_store()  # the CLI's store of the project
    async with open_plugin_tools(project) as plugin_tools:
        open_runtime = runtime_factory(
            request.config,
            project=project,
            provider=request.provider,
            model=request.model,
            approval_timeout_seconds=request.approval_timeout_seconds,
            plugin_tools=plugin_tools,
            session_store=store,
        )
        log = MemoryEventLog(request.server.event_log_size, MAX_LOGGED_SESSIONS)
        hub = EmbeddedTurnHub(
            open_runtime,
            log,
            max_concurrent_turns=request.server.max_concurrent_turns,
            max_queued_turns=request.server.max_queued_turns,
            max_live_sessions=MAX_LIVE_SESSIONS,
        )
        try:
            yield Backend(store=store, log=log, hub=hub)
        finally:
            await hub.aclose()
            await open_runtime.aclose()  # the provider clients its sessions shared


@contextlib.asynccontextmanager
async def _open_redis(request: BackendRequest) -> AsyncIterator[Backend]:
    # Sessions, events and the turn queue live in Redis; `ironhive worker` processes run the turns, none run here.
    from ironhive.adapters.serve.redis_hub import RedisTurnHub
    from ironhive.adapters.serve.redis_keys import TurnKeys
    from ironhive.adapters.serve.redis_log import RedisEventLog
    from ironhive.adapters.sessions.redis_connection import open_redis
    from ironhive.adapters.sessions.redis_store import RedisSessionStore

    client = await open_redis(str(request.server.redis))
    try:
        store = RedisSessionStore.for_project(client, request.project.resolve())
        keys = TurnKeys(store.keys.prefix)
        log = RedisEventLog(client, limit=request.server.event_log_size, keys=keys)
        hub = RedisTurnHub(client, max_queued_turns=request.server.max_queued_turns, keys=keys)
        try:
            yield Backend(store=store, log=log, hub=hub)
        finally:
            await hub.aclose()
    finally:
        await client.aclose()
