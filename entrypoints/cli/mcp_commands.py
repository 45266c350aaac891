"""The ``ironhive mcp`` commands: ``list`` (plugins, their trust and health), ``trust`` and ``untrust`` a plugin file.

A project's plugin file starts its servers only once trusted (a stdio plugin runs a command; an http one receives
tool calls); ``ironhive mcp trust`` (or ``ironhive trust`` for all of a project's files) records the file's path and
the SHA-256 of its content in ``~/.ironhive/trust.json`` (editing the file revokes it).
Only cyclopts is imported at module level; the MCP adapter (and the ``mcp`` SDK) load inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.adapters.mcp.plugin_config import McpServerConfig, PluginFile
    from ironhive.adapters.mcp.status import McpServerStatus
    from ironhive.adapters.mcp.trust import TrustStore

_NO_PLUGINS = (
    "No MCP plugins configured. Define them in .ironhive/plugins.yaml (this project) or ~/.ironhive/plugins.yaml "
    "(all projects).\n"
)


def register(app: App) -> None:
    """Add the ``mcp`` command group (``list``, ``trust``, ``untrust``) to ``app``."""
    group = App(name="mcp", help="MCP plugins: list them with their trust and health, trust a project's plugin file.")
    group.command(list_command, name="list")
    group.command(trust_command, name="trust")
    group.command(untrust_command, name="untrust")
    app.command(group)


def list_command(
    *,
    offline: Annotated[bool, Parameter(help="Do not start any server: show configuration and trust only.")] = False,
    output: Annotated[Literal["text", "json"], Parameter(name=["-o", "--output"], help="text or json.")] = "text",
) -> int:
    """List the MCP plugins of this project and of the user, with trust and (unless --offline) health."""
    import asyncio

    from ironhive.adapters.mcp.plugin_config import load_plugin_files, merge_plugin_files
    from ironhive.adapters.mcp.trust import TrustStore
    from ironhive.domain.errors import ConfigurationError

    home, project = Path.home(), Path.cwd()
    store = TrustStore.for_home(home)
    try:
        files = load_plugin_files(project, home)
        merged = merge_plugin_files(files, project)
        health = {} if offline or not merged.servers else asyncio.run(_check_health(project, home, store))
    except ConfigurationError as error:
        return _fail(str(error))
    rows = [_row(server, plugin_file, store, health.get(server.name)) for server, plugin_file in merged.servers]
    described = [_file_json(plugin_file, store) for plugin_file in files]
    if output == "json":
        document = {"files": described, "plugins": rows, "excluded": list(merged.excluded)}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return 0
    if not files:
        sys.stdout.write(_NO_PLUGINS)
        return 0
    for entry in described:
        sys.stdout.write(f"{entry['scope'].capitalize()} plugin file: {entry['path']} ({entry['trust']})\n")
    if merged.excluded:
        sys.stdout.write(f"Excluded: {', '.join(merged.excluded)}\n")
    sys.stdout.write("\n" + _table(rows, offline=offline))
    return 0


def trust_command(
    file: Annotated[str | None, Parameter(name="FILE", help="The plugin file (default: this project's).")] = None,
    /,
) -> int:
    """Trust a project plugin file as it is now, so its plugins may start (editing it revokes the trust)."""
    from ironhive.adapters.mcp.plugin_config import merge_plugin_files, read_plugin_file
    from ironhive.adapters.mcp.trust import TrustStore, command_line
    from ironhive.domain.errors import ConfigurationError

    path = _resolve_file(file)
    if path is None:
        return 1
    if _is_global(path):
        sys.stdout.write(f"{path} is your own global plugin file; it is always trusted.\n")
        return 0
    try:
        plugin_file = read_plugin_file(path, "project")
    except ConfigurationError as error:
        return _fail(f"{error}. Fix the file before trusting it.")
    store = TrustStore.for_home(Path.home())
    try:
        store.remember(plugin_file.path, plugin_file.sha256)  # the hash of the bytes just validated
    except OSError as error:
        return _fail(f"Cannot write {store.path}: {error}")
    sys.stdout.write(f"Trusted {plugin_file.path}\n  sha256 {plugin_file.sha256}\n")
    stdio = [
        server for server, _ in merge_plugin_files((plugin_file,), Path.cwd()).servers if server.transport == "stdio"
    ]
    if stdio:
        sys.stdout.write("These commands will start when ironhive runs with this file:\n")
        for server in stdio:
            sys.stdout.write(f"  {command_line(server)}\n")
    else:
        sys.stdout.write("It has no stdio plugins; its http and sse plugins will connect.\n")
    sys.stdout.write("Any edit to the file revokes this trust; review the change and run `ironhive mcp trust` again.\n")
    return 0


def untrust_command(
    file: Annotated[str | None, Parameter(name="FILE", help="The plugin file (default: this project's).")] = None,
    /,
) -> int:
    """Forget the trust of a project plugin file: its plugins no longer start."""
    from ironhive.adapters.mcp.trust import TrustStore

    path = _resolve_file(file)
    if path is None:
        return 1
    store = TrustStore.for_home(Path.home())
    try:
        removed = store.revoke(path)
    except OSError as error:
        return _fail(f"Cannot write {store.path}: {error}")
    sys.stdout.write(f"No longer trusted: {path}\n" if removed else f"{path} was not trusted.\n")
    return 0


async def _check_health(project: Path, home: Path, store: TrustStore) -> dict[str, McpServerStatus]:
    """Connect what may start (the plugins of untrusted files never do), then report; start-up noise stays quiet."""
    import logging

    from ironhive.adapters.mcp.provider import McpToolProvider

    logging.disable(logging.CRITICAL)
    try:
        async with McpToolProvider.from_config(project, home=home, trust_store=store) as provider:
            return {status.name: status for status in provider.status()}
    finally:
        logging.disable(logging.NOTSET)


def _row(
    server: McpServerConfig, plugin_file: PluginFile, store: TrustStore, status: McpServerStatus | None
) -> dict[str, object]:
    row: dict[str, object] = {
        "name": server.name,
        "transport": server.transport,
        "source": str(plugin_file.path),
        "trust": _plugin_trust(server, plugin_file, store),
    }
    if status is not None:
        row["state"] = status.state
        row["toolCount"] = status.tool_count
        if status.last_error:
            row["lastError"] = status.last_error
    return row


def _plugin_trust(server: McpServerConfig, plugin_file: PluginFile, store: TrustStore) -> str:
    if plugin_file.scope == "global":
        return "global"
    return store.state(plugin_file.path, plugin_file.sha256)


def _file_json(plugin_file: PluginFile, store: TrustStore) -> dict[str, str]:
    if plugin_file.scope == "global":
        trust = "your own file: always trusted"
    elif not plugin_file.has_servers:
        trust = "needs no trust: no plugins"
    else:
        state = store.state(plugin_file.path, plugin_file.sha256)
        trust = {
            "trusted": "trusted",
            "changed": "changed since it was trusted: review it, then run `ironhive mcp trust`",
            "untrusted": "not trusted: review it, then run `ironhive mcp trust`",
        }[state]
    return {"path": str(plugin_file.path), "scope": plugin_file.scope, "sha256": plugin_file.sha256, "trust": trust}


def _table(rows: list[dict[str, object]], *, offline: bool) -> str:
    headers = ["NAME", "TRANSPORT", "TRUST"] + ([] if offline else ["STATE", "TOOLS", "LAST ERROR"])
    keys = ["name", "transport", "trust"] + ([] if offline else ["state", "toolCount", "lastError"])
    cells = [headers] + [[_cell(row.get(key)) for key in keys] for row in rows]
    widths = [max(len(line[column]) for line in cells) for column in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in cells]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    if value is None:
        return "-"
    text = " ".join(str(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _resolve_file(file: str | None) -> Path | None:
    from ironhive.adapters.mcp.plugin_files import PROJECT_PLUGIN_FILES, find_project_plugin_file

    if file is not None:
        path = Path(file).absolute()
        if not path.is_file():
            _fail(f"No such file: {path}")
            return None
        return path
    found = find_project_plugin_file(Path.cwd())
    if found is None:
        _fail(f"No plugin file in {Path.cwd()} (looked for {', '.join(PROJECT_PLUGIN_FILES)})")
    return found


def _is_global(path: Path) -> bool:
    from ironhive.adapters.mcp.plugin_files import global_plugin_file

    candidate = global_plugin_file(Path.home())
    try:
        return candidate.is_file() and path.samefile(candidate)
    except OSError:
        return False


def _fail(message: str) -> int:
    sys.stderr.write(f"Error: {message}\n")
    return 1
