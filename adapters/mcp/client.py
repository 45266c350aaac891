"""McpServerConnection: one MCP server (a child process or an HTTP endpoint) through the official ``mcp`` SDK.

The SDK's ``Client`` is an async context manager built on anyio task groups, which must be left by the task that
entered them. Tool calls come from whatever task the agent runs in, and a restart may happen in any of them; so each
connection lives in an *owner task* of its own that enters the ``Client``, reports it ready and then waits to be
cancelled. Calls go through the ready ``Client`` from any task. Stopping cancels the owner's anyio cancel scope, which
honours the SDK's shielded shutdown (close stdin, wait, terminate the process group, reap), so no process survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
import logging
import math
import os
import tempfile
from collections.abc import Mapping
from typing import IO

import anyio
import httpx2
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED

from ironhive.adapters.mcp.mapping import result_text
from ironhive.adapters.mcp.plugin_config import McpServerConfig
from ironhive.adapters.mcp.status import McpServerStatus, ServerState
from ironhive.domain.errors import ToolError
from ironhive.ports.chat import JsonValue

logger = logging.getLogger(__name__)

_MAX_TOOL_PAGES = 100
_STDERR_TAIL = 600
_HTTP_STREAM_READ_TIMEOUT = 300.0
"""Seconds an idle server-sent event stream may stay silent (the SDK's default)."""


class _StartError(Exception):
    """The server did not start, or did not answer ``initialize``/``tools/list`` within its timeout."""


class McpServerConnection:
    """One MCP server: its connection, its tools, calls with a deadline, restarts after it died.

    Nothing here raises to the agent except ``ToolError`` from ``call``: start-up failures are recorded (``status``)
    and logged instead.

    Args:
        config: The server.
    """

    def __init__(self, config: McpServerConfig) -> None:
        self._config = config
        self._client: Client | None = None
        self._tools: tuple[mcp_types.Tool, ...] = ()
        self._owner: asyncio.Task[None] | None = None
        self._owner_scope: anyio.CancelScope | None = None
        self._stderr: IO[str] | None = None
        self._state: ServerState = "not_started"
        self._last_error: str | None = None
        self._closed = False
        self._lock = asyncio.Lock()

    @property
    def config(self) -> McpServerConfig:
        """The server's configuration."""
        return self._config

    @property
    def tools(self) -> tuple[mcp_types.Tool, ...]:
        """The tools of the last successful listing (kept while the server is down, so a call can restart it)."""
        return self._tools

    def status(self) -> McpServerStatus:
        """The server's state, tool count and last error."""
        return McpServerStatus(
            name=self._config.name,
            transport=self._config.transport,
            state=self._state,
            tool_count=len(self._tools),
            last_error=self._last_error,
            source=self._config.source,
        )

    @property
    def _startup_timeout(self) -> float:
        startup = self._config.startup_timeout
        return self._config.timeout if startup is None else startup

    async def start(self) -> bool:
        """Connect and list the tools within the timeout; on failure record and log why.

        Returns:
            Whether the server is connected.
        """
        async with self._lock:
            return await self._start()

    async def refresh(self) -> bool:
        """List the tools again (a health check): a failed connection counts as dead, a slow answer as an error.

        Returns:
            Whether the server answered within its timeout.
        """
        client = self._client
        if client is None or self._state != "connected":
            return False
        with anyio.move_on_after(self._config.timeout) as scope:
            try:
                tools = await _list_tools(client)
            except Exception as error:  # any failure makes the server unhealthy, never the caller
                self._mark_dead(_describe(error))
                return False
        if scope.cancelled_caught:
            self._last_error = f"tools/list got no answer within {_milliseconds(self._config.timeout)} ms"
            return False
        self._tools = tools
        self._last_error = None
        return True

    async def call(self, tool: str, arguments: Mapping[str, JsonValue], display_name: str) -> str:
        """Call one tool and return its content as text.

        The call may take the server's timeout; each progress notification the server sends for it starts that time
        again. A server that died before is restarted first (``autoReconnect``).

        Args:
            tool: The tool's name on the server.
            arguments: The arguments (``McpTool`` checked them against the tool's input schema), sent as given.
            display_name: The tool's ironhive name, for messages.

        Raises:
            ToolError: The server is not available, the call timed out, the connection died during the call, or the
                tool reported an error (``isError``; the message is its text).
        """
        client = await self._ready_client()
        timeout = self._config.timeout
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                scope.deadline = anyio.current_time() + timeout

            try:
                result = await client.call_tool(tool, dict(arguments), progress_callback=on_progress)
            except MCPError as error:
                if error.code == CONNECTION_CLOSED:
                    raise self._died(display_name, self._stderr_tail() or error.message) from error
                raise ToolError(f"MCP tool '{display_name}' failed: {error.message}") from error
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, httpx2.TransportError) as error:
                raise self._died(display_name, _describe(error)) from error
            except Exception as error:  # a bad result must reach the model as a failure, not crash it
                raise ToolError(f"MCP tool '{display_name}' failed: {_describe(error)}") from error
        if scope.cancelled_caught:
            raise ToolError(f"MCP tool '{display_name}' timed out after {_milliseconds(timeout)} ms")
        text = result_text(result)
        if result.is_error:
            raise ToolError(text or f"MCP tool '{display_name}' reported an error")
        return text

    async def close(self) -> None:
        """Stop the server (its process exits and is reaped) and release everything; idempotent."""
        self._closed = True
        await self._stop_owner()
        if self._state == "connected":
            self._state = "disconnected"

    # -- lifecycle ------------------------------------------------------------------------------------------------

    async def _ready_client(self) -> Client:
        client = self._client
        if client is not None and self._state == "connected":
            return client
        async with self._lock:
            if self._client is not None and self._state == "connected":
                return self._client
            name = self._config.name
            if self._closed:
                raise ToolError(f"MCP server '{name}' is closed")
            if self._state == "disconnected" and not self._config.auto_reconnect:
                raise ToolError(f"MCP server '{name}' is not connected ({self._last_error}); autoReconnect is off")
            if self._state == "disconnected":
                logger.info("Restarting MCP server '%s'", name)
            if not await self._start() or self._client is None:
                raise ToolError(f"MCP server '{name}' is not available: {self._last_error}")
            return self._client

    async def _start(self) -> bool:
        restarting = self._state in ("connected", "disconnected", "failed")
        await self._stop_owner()
        if self._closed:
            return False
        ready: asyncio.Future[tuple[Client, tuple[mcp_types.Tool, ...]]] = asyncio.get_running_loop().create_future()
        scope = anyio.CancelScope(deadline=anyio.current_time() + self._startup_timeout)
        self._owner_scope = scope
        self._owner = asyncio.create_task(self._own(scope, ready), name=f"mcp-server:{self._config.name}")
        try:
            client, tools = await ready
        except _StartError as error:
            self._state = "failed"
            self._last_error = str(error)
            outcome = "could not be restarted" if restarting else "is skipped"
            logger.warning("MCP server '%s' %s: %s", self._config.name, outcome, error)
            await self._stop_owner()
            return False
        except BaseException:
            await self._stop_owner()
            raise
        self._client = client
        self._tools = tools
        self._state = "connected"
        self._last_error = None
        return True

    async def _own(
        self,
        scope: anyio.CancelScope,
        ready: asyncio.Future[tuple[Client, tuple[mcp_types.Tool, ...]]],
    ) -> None:
        """The owner task: enter the SDK client, hand it over, hold it until the scope is cancelled."""
        try:
            with scope:
                async with contextlib.AsyncExitStack() as stack:
                    transport = await self._open_transport(stack)
                    client = await stack.enter_async_context(Client(transport, client_info=_client_info(), cache=None))
                    tools = await _list_tools(client)
                    scope.deadline = math.inf
                    if not ready.done():
                        ready.set_result((client, tools))
                    await anyio.sleep_forever()
            if scope.cancelled_caught and not ready.done():
                tail = self._stderr_tail()
                message = f"no answer within {_milliseconds(self._startup_timeout)} ms"
                ready.set_exception(_StartError(f"{message}; stderr: {tail}" if tail else message))
        except Exception as error:  # the owner reports every failure instead of dying with it
            message = _describe(error)
            tail = self._stderr_tail()
            if tail and tail not in message:
                message = f"{message}; stderr: {tail}"
            if not ready.done():
                ready.set_exception(_StartError(message))
            elif self._owner_scope is scope:
                self._mark_dead(message)
        finally:
            if not ready.done():
                ready.set_exception(_StartError("stopped before it was ready"))

    async def _open_transport(self, stack: contextlib.AsyncExitStack) -> Transport:
        config = self._config
        if config.transport == "stdio":
            # Kept past the owner's exit so a failure can quote it; closed by _stop_owner.
            stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            self._stderr = stderr
            parameters = StdioServerParameters(
                command=config.command or "",
                args=list(config.arguments),
                env=dict(config.environment) or None,
                cwd=config.working_directory,
            )
            return stdio_client(parameters, errlog=stderr)
        url = config.url or ""
        headers = dict(config.headers) or None
        if config.transport == "sse":
            return sse_client(url, headers=headers, timeout=config.timeout)
        http = httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(config.timeout, read=max(config.timeout, _HTTP_STREAM_READ_TIMEOUT))
        )
        await stack.enter_async_context(http)
        return streamable_http_client(url, http_client=http)

    async def _stop_owner(self) -> None:
        owner, scope, stderr = self._owner, self._owner_scope, self._stderr
        self._owner = self._owner_scope = self._stderr = None
        self._client = None
        try:
            if scope is not None:
                scope.cancel()
            if owner is not None:
                await owner
        finally:
            if stderr is not None:
                stderr.close()

    def _mark_dead(self, reason: str) -> None:
        if self._state == "connected":
            logger.warning("MCP server '%s' stopped: %s", self._config.name, reason)
        self._state = "disconnected"
        self._client = None
        self._last_error = reason

    def _died(self, display_name: str, reason: str) -> ToolError:
        self._mark_dead(reason)
        restart = " It is restarted on the next call." if self._config.auto_reconnect and not self._closed else ""
        return ToolError(
            f"MCP tool '{display_name}' failed: the server '{self._config.name}' stopped ({reason}).{restart}"
        )

    def _stderr_tail(self) -> str:
        stderr = self._stderr
        if stderr is None or stderr.closed:
            return ""
        try:
            size = os.fstat(stderr.fileno()).st_size
            data = os.pread(stderr.fileno(), _STDERR_TAIL, max(0, size - _STDERR_TAIL))
        except OSError:
            return ""
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        return " | ".join(lines[-5:])


async def _list_tools(client: Client) -> tuple[mcp_types.Tool, ...]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


def _describe(error: BaseException) -> str:
    """One line for an error; the leaves of an exception group (anyio task groups wrap everything in one)."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_describe(inner) for inner in error.exceptions))
    if isinstance(error, MCPError):
        return error.message
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"command not found: {error.filename}"
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _milliseconds(seconds: float) -> int:
    return round(seconds * 1000)


@functools.cache
def _client_info() -> mcp_types.Implementation:
    try:
        version = importlib.metadata.version("ironhive")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return mcp_types.Implementation(name="ironhive", version=version)
