"""The agents ``ironhive serve`` and ``ironhive worker`` run: one per session, built as ``run --server`` builds its."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.mcp.plugin_files import plugin_file_exists
from ironhive.adapters.provider_registry import spec_of
from ironhive.adapters.serve.hub import SessionRuntime
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.agent_factory import AgentSettings, build_agent
from ironhive.container import IronHiveContainer
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.ports.chat import ChatClient, Preloadable
from ironhive.server import agent_processor, served_settings

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.ports.sessions import ExecutionLog, SessionStore
    from ironhive.ports.tools import Tool


@contextlib.asynccontextmanager
async def open_plugin_tools(project: Path) -> AsyncIterator[Sequence[Tool]]:
    """The MCP plugin servers' tools, their servers running while the block runs: started once per process and
    shared by every session's agent.

    Untrusted project plugin files are not started (nobody can be asked; ``ironhive mcp trust`` trusts one ahead of
    time). With no plugin file the MCP adapter and its SDK stay unimported.

    Raises:
        ConfigurationError: A plugin file is broken.
    """
    root = await asyncio.to_thread(project.resolve)
    if not plugin_file_exists(root, Path.home()):
        yield ()
        return
    from ironhive.adapters.mcp.provider import McpToolProvider

    async with McpToolProvider.from_config(root, trust=None) as plugins:
        yield tuple(await plugins.get_tools())


class SessionRuntimes:
    """What builds each session's agent for ``serve`` (embedded) and ``worker`` (Redis): call it with a session id.

    Each agent is built as ``run --server`` builds its (the CLI's tools and permissions, Idle mode, its own approval
    bridge), with the plugin tools added, and bound to its session (resumed, or created with its first turn). The
    settings are checked once, when this is made, so a configuration that cannot work stops the server before it
    listens.

    The chat clients of a chain of remote providers (HTTP SDK clients: a connection pool, no conversation state) are
    built once, on the first session's turn, and shared by every session's agent until :meth:`aclose`: a turn then
    reuses the pool's open connections instead of building an SDK client and connecting again. A chain with a local
    or scripted provider (a model loaded per client, or a script that is consumed) gets its own clients per agent,
    closed with it.
    """

    def __init__(
        self,
        config: IronHiveConfig,
        *,
        project: Path,
        provider: str | None,
        model: str | None,
        approval_timeout_seconds: float | None,
        plugin_tools: Sequence[Tool],
        session_store: SessionStore,
        execution_log: ExecutionLog,
    ) -> None:
        self._plugin_tools = plugin_tools
        self._store = session_store
        self._log = execution_log
        # worked out once (a configuration that cannot work fails at start-up); each session gets its own bridge
        self._settings, bridge = served_settings(
            config,
            project=project,
            provider=provider,
            model=model,
            approval_timeout_seconds=approval_timeout_seconds,
        )
        bridge.close()
        self._approval_timeout = bridge.timeout_seconds
        self._share = all(spec_of(choice.name).remote for choice in self._settings.providers)
        self._clients: tuple[ChatClient, ...] | None = None

    async def __call__(self, session_id: str) -> SessionRuntime:
        """The session's agent on the session store this was made with (see :meth:`open_on`)."""
        return await self.open_on(session_id, self._store)

    async def open_on(self, session_id: str, store: SessionStore) -> SessionRuntime:
        """The session's agent, its history loaded from ``store`` and its turns recorded there.

        Raises:
            ConfigurationError: A provider cannot be built, or a section is invalid.
            SessionNotFoundError: The store cannot load the session.
        """
        bridge = HitlBridge(timeout_seconds=self._approval_timeout)
        agent_settings = replace(self._settings, approval=bridge)
        try:
            agent = await build_agent(
                agent_settings, extra_tools=self._plugin_tools, clients=self._shared_clients(agent_settings)
            )
        except BaseException:
            bridge.close()
            raise
        try:
            binding = await SessionBinding.open(
                agent.loop,
                SessionRequest(session_id=session_id),
                model=agent.provider.model,
                store=store,
                log=self._log,
            )
            if isinstance(agent.client, Preloadable):
                await agent.client.warm_up()
        except BaseException:
            bridge.close()
            await agent.container.aclose()
            raise

        async def close() -> None:
            bridge.close()
            await agent.container.aclose()

        return SessionRuntime(process=agent_processor(agent.loop, binding), bridge=bridge, close=close)

    async def aclose(self) -> None:
        """Close the shared clients (call it once no session's agent runs any more)."""
        clients, self._clients = self._clients, None
        for client in clients or ():
            close = getattr(client, "aclose", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    await close()

    def _shared_clients(self, settings: AgentSettings) -> tuple[ChatClient, ...] | None:
        if not self._share:
            return None
        if self._clients is None:
            self._clients = tuple(choice.build() for choice in settings.providers)
        return self._clients


def runtime_factory(
    config: IronHiveConfig,
    *,
    project: Path,
    provider: str | None,
    model: str | None,
    approval_timeout_seconds: float | None,
    plugin_tools: Sequence[Tool] = (),
    session_store: SessionStore | None = None,
    execution_log: ExecutionLog | None = None,
) -> SessionRuntimes:
    """The :class:`SessionRuntimes` of ``serve`` and ``worker`` (its owner calls ``aclose`` when done with it).

    Args:
        config: The merged configuration.
        project: The working directory the tools and permission rules work in.
        provider: ``--provider``.
        model: ``-m``.
        approval_timeout_seconds: ``--approval-timeout``; ``approval.timeoutSeconds`` when None.
        plugin_tools: The MCP plugin tools the caller started (see :func:`open_plugin_tools`).
        session_store: Where sessions are kept; the project's diskcache store when None.
        execution_log: Where turns are logged; the JSON Lines log under ``~/.ironhive/logs`` when None.

    Raises:
        ConfigurationError: No provider fits, or a section is invalid.
    """
    project = project.resolve()
    if session_store is None or execution_log is None:
        defaults = IronHiveContainer().override(working_directory=project)
        session_store = defaults.session_store() if session_store is None else session_store
        execution_log = defaults.execution_log() if execution_log is None else execution_log
    return SessionRuntimes(
        config,
        project=project,
        provider=provider,
        model=model,
        approval_timeout_seconds=approval_timeout_seconds,
        plugin_tools=plugin_tools,
        session_store=session_store,
        execution_log=execution_log,
    )
