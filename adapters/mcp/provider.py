"""McpToolProvider: the tools of every configured MCP server as ironhive tools named ``mcp__<server>__<tool>``.

The prefix matters: the permission engine judges names starting ``mcp__`` by the ``mcp_tools`` rules (the original
registered raw names, so those rules never applied; inventory I.9).

Usage (the provider owns every connection; leaving the block stops every server process)::

    async with McpToolProvider.from_config(Path.cwd(), trust=decider) as provider:
        tools = await provider.get_tools()

The ``mcp`` SDK is imported only when there is a server to connect, so a project without plugins pays nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from ironhive.adapters.mcp.plugin_config import McpServerConfig, load_plugin_files, merge_plugin_files
from ironhive.adapters.mcp.status import McpServerStatus
from ironhive.adapters.mcp.trust import AlwaysDeny, TrustDecider, TrustStore, check_trust
from ironhive.ports.chat import JsonValue, ToolSpec
from ironhive.ports.tools import Tool

if TYPE_CHECKING:
    from ironhive.adapters.mcp.client import McpServerConnection

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Plan:
    """What ``from_config`` found: the servers to connect, the ones held back, and whether to connect at once."""

    servers: tuple[McpServerConfig, ...]
    refused: tuple[McpServerStatus, ...]
    auto_connect: bool


class McpTool:
    """One tool of an MCP server, callable as an ironhive ``Tool``.

    Args:
        spec: Its ironhive name (``mcp__<server>__<tool>``), the server's description and input schema.
        connection: The server.
        remote_name: The tool's name on the server.
    """

    def __init__(self, spec: ToolSpec, connection: McpServerConnection, remote_name: str) -> None:
        self._spec = spec
        self._connection = connection
        self._remote_name = remote_name

    @property
    def spec(self) -> ToolSpec:
        """The tool's ironhive name, description and JSON schema."""
        return self._spec

    @property
    def server_name(self) -> str:
        """The plugin's name."""
        return self._connection.config.name

    @property
    def remote_name(self) -> str:
        """The tool's name on the server."""
        return self._remote_name

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Check the arguments against the server's input schema, then call the tool (restarting a dead server first).

        Arguments that do not fit never reach the server: the model gets the same recovery directive as for a
        built-in tool, naming the parameter, what it must be and what was sent.

        Raises:
            ToolArgumentError: The arguments do not fit the tool's input schema.
            ToolError: The server is not available, the call timed out or failed, or the tool reported an error.
        """
        # Imported here: the tools package loads every built-in tool, which listing MCP servers has no use for.
        from ironhive.adapters.tools.arguments import validate_arguments

        validated = validate_arguments(self._spec.name, self._spec.parameters, arguments, fill_defaults=False)
        return await self._connection.call(self._remote_name, dict(validated), self._spec.name)


class McpToolProvider:
    """The ``ToolProvider`` of MCP servers: connects them, lists their tools, restarts them, stops them.

    A server that does not start or answer within its timeout is skipped (logged, and visible in ``status()``); the
    others work. Use it as an async context manager; ``get_tools`` is valid inside the block only.

    Args:
        servers: The servers to connect.
        auto_connect: Connect on entering (``True``) or on the first ``get_tools`` (``False``).
    """

    def __init__(self, servers: Sequence[McpServerConfig] = (), *, auto_connect: bool = True) -> None:
        names = [server.name for server in servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"MCP server names must be unique: {', '.join(duplicates)}")
        self._servers = tuple(servers)
        self._auto_connect = auto_connect
        self._plan: Callable[[], Awaitable[_Plan]] | None = None
        self._refused: tuple[McpServerStatus, ...] = ()
        self._connections: tuple[McpServerConnection, ...] = ()
        self._tools: dict[tuple[str, str], McpTool] = {}
        self._started = False
        self._entered = False
        self._start_lock = asyncio.Lock()

    @classmethod
    def from_config(
        cls,
        project_dir: Path,
        *,
        home: Path | None = None,
        trust: TrustDecider | None = None,
        trust_store: TrustStore | None = None,
    ) -> McpToolProvider:
        """A provider of the plugin files of a project and of the user (read when the block is entered).

        Args:
            project_dir: The project (working) directory: where the project's plugin file is looked for, and what
                relative working directories start from.
            home: The user's home directory (``Path.home()`` when omitted): ``~/.ironhive/plugins.yaml`` and the trust
                store live there.
            trust: Asked about an untrusted project file with stdio plugins. When omitted such plugins are skipped
                with a warning that names the file and ``ironhive mcp trust``.
            trust_store: Where trust decisions are remembered (``~/.ironhive/trusted-plugins.json`` when omitted).

        Entering the returned provider raises ``ConfigurationError`` when a plugin file is malformed.
        """
        user_home = home if home is not None else Path.home()
        store = trust_store if trust_store is not None else TrustStore.for_home(user_home)
        decider = trust if trust is not None else AlwaysDeny()

        async def plan() -> _Plan:
            files = await asyncio.to_thread(load_plugin_files, project_dir, user_home)
            merged = merge_plugin_files(files, project_dir)
            outcome = await check_trust(merged, store, decider)
            return _Plan(servers=outcome.allowed, refused=outcome.refused, auto_connect=merged.auto_connect)

        provider = cls()
        provider._plan = plan
        return provider

    async def __aenter__(self) -> Self:
        """Read the plugin files (``from_config``), decide trust, connect the servers (unless ``autoConnect`` is off).

        Raises:
            ConfigurationError: A plugin file is malformed.
        """
        if self._entered:
            raise RuntimeError("McpToolProvider is already entered")
        self._entered = True
        if self._plan is not None:
            plan = await self._plan()
            self._servers, self._refused, self._auto_connect = plan.servers, plan.refused, plan.auto_connect
        if self._servers:
            from ironhive.adapters.mcp.client import McpServerConnection

            self._connections = tuple(McpServerConnection(server) for server in self._servers)
        if self._auto_connect:
            try:
                await self._start_all()
            except BaseException:
                await self.aclose()
                raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        """Stop every server."""
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every server process and close every connection (waiting until each process has been reaped)."""
        results = await asyncio.gather(
            *(connection.close() for connection in self._connections), return_exceptions=True
        )
        for connection, result in zip(self._connections, results, strict=True):
            if isinstance(result, BaseException):
                logger.warning("Closing MCP server '%s' failed: %s", connection.config.name, result)

    async def get_tools(self) -> Sequence[Tool]:
        """The tools of every connected server (and of servers that died, so that a call restarts them)."""
        if not self._entered:
            raise RuntimeError("Use McpToolProvider as an async context manager before asking for tools")
        await self._start_all()
        if not self._connections:
            return []
        from ironhive.adapters.mcp.mapping import tool_name, tool_spec

        tools: list[Tool] = []
        taken: set[str] = set()
        for connection in self._connections:
            server = connection.config.name
            for remote in connection.tools:
                name = tool_name(server, remote.name)
                if name in taken:
                    name = tool_name(server, remote.name, disambiguate=True)
                taken.add(name)
                spec = tool_spec(name, remote)
                known = self._tools.get((server, remote.name))
                if known is None or known.spec != spec:
                    known = McpTool(spec, connection, remote.name)
                    self._tools[(server, remote.name)] = known
                tools.append(known)
        return tools

    def status(self) -> tuple[McpServerStatus, ...]:
        """Every configured server's state (held-back ones included), for ``doctor`` and ``ironhive mcp list``."""
        connected = tuple(connection.status() for connection in self._connections)
        if not self._connections:
            connected = tuple(
                McpServerStatus(name=server.name, transport=server.transport, state="not_started", source=server.source)
                for server in self._servers
            )
        return self._refused + connected

    async def check_health(self) -> tuple[McpServerStatus, ...]:
        """List every connected server's tools again within its timeout, then report ``status()``."""
        await asyncio.gather(*(connection.refresh() for connection in self._connections))
        return self.status()

    async def _start_all(self) -> None:
        async with self._start_lock:
            if self._started:
                return
            self._started = True
            await asyncio.gather(*(connection.start() for connection in self._connections))
