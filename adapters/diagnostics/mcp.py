"""Doctor's MCP check: the plugin files, their trust, and whether each allowed server starts and lists its tools."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.diagnostics.report import MCP, Check, CheckStatus
from ironhive.domain.errors import ConfigurationError

if TYPE_CHECKING:
    from ironhive.adapters.mcp.plugin_config import MergedPlugins, PluginFile
    from ironhive.adapters.mcp.status import McpServerStatus
    from ironhive.adapters.mcp.trust import TrustStore

NO_PLUGINS = "No plugins configured"
_LIST_HINT = "`ironhive mcp list` shows every plugin's state and last error."


def mcp_checks(project: Path, home: Path, *, verbose: bool) -> list[Check]:
    """Read the plugin files, report their trust, start the servers that may start and report each one's health.

    Untrusted stdio plugins of a project file never start (their file gets a warning). Servers are stopped again
    before this returns.

    Args:
        project: The project (working) directory.
        home: The user's home directory (``~/.ironhive/plugins.yaml`` and the trust store).
        verbose: List each connected server's tools.

    Returns:
        The checks (a single pass when there are no plugins or the MCP adapter is not installed).
    """
    if importlib.util.find_spec("ironhive.adapters.mcp.plugin_config") is None:
        return [_check("Plugins", "pass", NO_PLUGINS)]
    from ironhive.adapters.mcp.plugin_config import load_plugin_files, merge_plugin_files
    from ironhive.adapters.mcp.trust import TrustStore

    try:
        files = load_plugin_files(project, home)
    except ConfigurationError as error:
        return [_check("Plugin files", "error", str(error), "Fix the file; until then no plugin starts.")]
    if not files:
        return [_check("Plugins", "pass", NO_PLUGINS)]
    store = TrustStore.for_home(home)
    merged = merge_plugin_files(files, project)
    checks = [_file_check(plugin_file, merged, store) for plugin_file in files]
    if not merged.servers:
        excluded = f" (excluded: {', '.join(merged.excluded)})" if merged.excluded else ""
        return [*checks, _check("Plugins", "pass", f"No plugins to start{excluded}")]
    import asyncio

    try:
        statuses, tools = asyncio.run(_health(project, home, store))
    except Exception as error:  # the check reports any failure of the MCP stack instead of crashing doctor
        return [*checks, _check("Plugins", "error", f"Checking the MCP servers failed: {error}", _LIST_HINT)]
    reported = (_server_check(status, tools.get(status.name, ()), verbose) for status in statuses)
    return checks + [check for check in reported if check is not None]


async def _health(
    project: Path, home: Path, store: TrustStore
) -> tuple[tuple[McpServerStatus, ...], dict[str, list[str]]]:
    """Start what may start (untrusted files' plugins never do), list the tools, stop; start-up noise stays quiet."""
    import logging

    from ironhive.adapters.mcp.provider import McpTool, McpToolProvider

    logging.disable(logging.CRITICAL)
    try:
        async with McpToolProvider.from_config(project, home=home, trust_store=store) as provider:
            tools: dict[str, list[str]] = {}
            for tool in await provider.get_tools():  # starts the servers even when autoConnect is off
                if isinstance(tool, McpTool):
                    tools.setdefault(tool.server_name, []).append(tool.remote_name)
            return provider.status(), tools
    finally:
        logging.disable(logging.NOTSET)


def _file_check(plugin_file: PluginFile, merged: MergedPlugins, store: TrustStore) -> Check:
    name = f"{plugin_file.scope.capitalize()} plugin file"
    path = plugin_file.path
    if plugin_file.scope == "global":
        return _check(name, "pass", f"{path} (your own file: always trusted)")
    if not plugin_file.has_servers:
        return _check(name, "pass", f"{path} (needs no trust: no plugins)")
    state = store.state(path, plugin_file.sha256)
    if state == "trusted":
        return _check(name, "pass", f"{path} (trusted)")
    held_back = [server.name for server, source in merged.servers if source is plugin_file]
    why = "changed since it was trusted" if state == "changed" else "not trusted"
    message = f"{path} is {why}; its plugins do not start: {', '.join(held_back)}"
    return _check(name, "warning", message, f"Review it, then run `ironhive trust` (or `ironhive mcp trust {path}`).")


def _server_check(status: McpServerStatus, tools: Sequence[str], verbose: bool) -> Check | None:
    name = f"Plugin {status.name}"
    match status.state:
        case "untrusted":
            return None  # reported once, on its file
        case "connected":
            count = f"{status.tool_count} tool{'' if status.tool_count == 1 else 's'}"
            listed = f": {', '.join(tools)}" if verbose and tools else ""
            return _check(name, "pass", f"Started ({status.transport}); {count}{listed}")
        case "disconnected":
            return _check(name, "error", f"Exited after starting: {status.last_error or 'no reason given'}", _LIST_HINT)
        case "failed":
            source = f" in {status.source}" if status.source else ""
            hint = f"Check its command or url{source}. {_LIST_HINT}"
            return _check(name, "error", f"Did not start ({status.transport}): {status.last_error}", hint)
    return _check(name, "warning", f"Not started ({status.state})", _LIST_HINT)


def _check(name: str, status: CheckStatus, message: str, hint: str | None = None) -> Check:
    return Check(category=MCP, name=name, status=status, message=message, hint=hint)
