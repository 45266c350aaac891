"""The MCP servers an editor passes in ``session/new`` / ``session/load`` as ironhive MCP server settings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from ironhive.adapters.mcp.plugin_config import McpServerConfig

_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")


def server_name(name: str, taken: set[str]) -> str:
    """A tool-name-safe, unique server name (the ``<server>`` of ``mcp__<server>__<tool>``)."""
    base = _NAME_CHARACTERS.sub("_", name).strip("_")[:32] or "editor"
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}_{number}", number + 1
    taken.add(candidate)
    return candidate


def server_configs(servers: Sequence[object], cwd: Path) -> list[McpServerConfig]:
    """One ironhive server setting per editor server (stdio, http or sse); other kinds are left out."""
    taken: set[str] = set()
    configs: list[McpServerConfig] = []
    for server in servers:
        if isinstance(server, McpServerStdio):
            configs.append(
                McpServerConfig(
                    name=server_name(server.name, taken),
                    transport="stdio",
                    command=server.command,
                    arguments=tuple(server.args),
                    environment={variable.name: variable.value for variable in server.env},
                    working_directory=cwd,
                )
            )
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            configs.append(
                McpServerConfig(
                    name=server_name(server.name, taken),
                    transport="http" if isinstance(server, HttpMcpServer) else "sse",
                    url=server.url,
                    headers={header.name: header.value for header in server.headers},
                )
            )
    return configs
