"""The agents ``ironhive serve`` and ``ironhive worker`` run: one per session, built as ``run --server`` builds its."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.mcp.plugin_files import plugin_file_exists
from ironhive.adapters.serve.hub import OpenRuntime, SessionRuntime
from ironhive.agent_factory import build_agent
from ironhive.container import IronHiveContainer
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.ports.chat import Preloadable
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
) -> OpenRuntime:
    """What builds each session's agent for ``serve`` (embedded) and ``worker`` (Redis).

    Each agent is built as ``run --server`` builds its (the CLI's tools and permissions, Idle mode, its own approval
    bridge), with ``plugin_tools`` added, and bound to its session (resumed, or created with its first turn). The
    settings are checked here once, so a configuration that cannot work stops the server before it listens.

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

    # fail at start-up, not at every session's first turn
    served_settings(
        config, project=project, provider=provider, model=model, approval_timeout_seconds=approval_timeout_seconds
    )
    if session_store is None or execution_log is None:
        defaults = IronHiveContainer().override(working_directory=project)
        session_store = defaults.session_store() if session_store is None else session_store
        execution_log = defaults.execution_log() if execution_log is None else execution_log
    store, log = session_store, execution_log

    async def open_runtime(session_id: str) -> SessionRuntime:
        agent_settings, bridge = served_settings(
            config, project=project, provider=provider, model=model, approval_timeout_seconds=approval_timeout_seconds
        )
        agent = await build_agent(agent_settings, extra_tools=plugin_tools)
        try:
            binding = await SessionBinding.open(
                agent.loop, SessionRequest(session_id=session_id), model=agent.provider.model, store=store, log=log
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

    return open_runtime
