"""Trust in project plugin files: a project's plugins start only once someone trusted the file's exact content.

A cloned repository can carry ``.ironhive/plugins.yaml``; running its stdio plugins on start-up would run the
repository author's commands, and connecting its http/sse plugins would send tool calls (and whatever the model puts
in them) to servers the repository names. So the servers of a *project* file start only when its exact content is
trusted in the one trust store of :mod:`ironhive.adapters.config.trust` (``ironhive trust`` or ``ironhive mcp trust``;
any edit needs trusting again), and a ``TrustDecider`` is asked about a file that is not (yet) trusted.

Decided on purpose:

- The global ``~/.ironhive/plugins.yaml`` is the user's own and is always trusted.
- ``IRONHIVE_TRUST_PROJECT=1`` trusts the project file for the run; a file declined earlier in the process (at the
  start-up question about the project's files) is not asked about again.
- A decider that fails counts as a denial.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ironhive.adapters.config.trust import (
    TRUST_FILE_NAME,
    TrustRecord,
    TrustState,
    TrustStore,
    trust_all_requested,
    was_declined,
)
from ironhive.adapters.mcp.status import McpServerStatus

if TYPE_CHECKING:
    from ironhive.adapters.mcp.plugin_config import McpServerConfig, MergedPlugins, PluginFile

logger = logging.getLogger(__name__)

__all__ = [
    "TRUST_FILE_NAME",
    "AlwaysDeny",
    "TrustDecider",
    "TrustDecision",
    "TrustOutcome",
    "TrustRecord",
    "TrustRequest",
    "TrustState",
    "TrustStore",
    "check_trust",
    "command_line",
]


class TrustDecision(StrEnum):
    """A decider's answer about one plugin file."""

    ALWAYS = "always"
    """Run it, and remember this content as trusted."""
    ONCE = "once"
    """Run it this time only."""
    DENY = "deny"
    """Do not start its servers."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustRequest:
    """What a decider is asked: may this project plugin file start these commands?

    Attributes:
        path: The plugin file's absolute path.
        sha256: Hex SHA-256 of the content that would run.
        commands: One line per server: ``<name>: <command line>`` (stdio) or ``<name>: <url>`` (http, sse).
        changed: Whether the same path was trusted before with different content.
    """

    path: Path
    sha256: str
    commands: tuple[str, ...]
    changed: bool


class TrustDecider(Protocol):
    """Decides whether an untrusted project plugin file may start its servers (a prompt, a wire request...)."""

    async def decide(self, request: TrustRequest) -> TrustDecision:
        """Answer for one file.

        Args:
            request: The file, its hash and the commands it would run.

        Returns:
            The decision.
        """
        ...


class AlwaysDeny:
    """The decider used when nobody can be asked: the servers of untrusted files never start."""

    async def decide(self, request: TrustRequest) -> TrustDecision:
        """Deny every file."""
        return TrustDecision.DENY


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustOutcome:
    """Which merged servers may start, and a status for each one held back.

    Attributes:
        allowed: The servers to connect.
        refused: The servers of untrusted files, as ``untrusted`` statuses.
    """

    allowed: tuple[McpServerConfig, ...]
    refused: tuple[McpServerStatus, ...]


async def check_trust(merged: MergedPlugins, store: TrustStore, decider: TrustDecider) -> TrustOutcome:
    """Hold back the servers of project files that are not trusted and that the decider does not allow.

    Args:
        merged: The servers of the plugin files.
        store: The remembered trusts (read, and written on a ``TrustDecision.ALWAYS``).
        decider: Asked once per untrusted project file that has servers.

    Returns:
        The servers that may start and statuses for the refused ones.
    """
    by_file: dict[Path, tuple[PluginFile, list[McpServerConfig]]] = {}
    for server, plugin_file in merged.servers:
        if plugin_file.scope == "project":
            by_file.setdefault(plugin_file.path, (plugin_file, []))[1].append(server)
    refused_names: set[str] = set()
    refused: list[McpServerStatus] = []
    for plugin_file, servers in by_file.values():
        if await _file_allowed(plugin_file, servers, store, decider):
            continue
        names = ", ".join(server.name for server in servers)
        logger.warning(
            "Not starting the MCP plugin(s) %s from %s: the file is not trusted (or changed since it was trusted). "
            "Review it, then run `ironhive trust` (or `ironhive mcp trust %s`) to allow it.",
            names,
            plugin_file.path,
            plugin_file.path,
        )
        message = (
            f"{plugin_file.path} is not trusted; review it, then run `ironhive trust` "
            f"(or `ironhive mcp trust {plugin_file.path}`)"
        )
        for server in servers:
            refused_names.add(server.name)
            refused.append(
                McpServerStatus(
                    name=server.name,
                    transport=server.transport,
                    state="untrusted",
                    last_error=message,
                    source=plugin_file.path,
                )
            )
    allowed = tuple(server for server, _ in merged.servers if server.name not in refused_names)
    return TrustOutcome(allowed=allowed, refused=tuple(refused))


async def _file_allowed(
    plugin_file: PluginFile, servers: Sequence[McpServerConfig], store: TrustStore, decider: TrustDecider
) -> bool:
    if trust_all_requested(os.environ):
        return True
    state = await asyncio.to_thread(store.state, plugin_file.path, plugin_file.sha256)
    if state == "trusted":
        return True
    if was_declined(plugin_file.path, plugin_file.sha256):
        return False
    request = TrustRequest(
        path=plugin_file.path,
        sha256=plugin_file.sha256,
        commands=tuple(command_line(server) for server in servers),
        changed=state == "changed",
    )
    try:
        decision = await decider.decide(request)
    except Exception:
        logger.exception("Deciding trust for %s failed; treating it as denied", plugin_file.path)
        return False
    if decision == TrustDecision.ALWAYS:
        try:
            await asyncio.to_thread(store.remember, plugin_file.path, plugin_file.sha256)
        except OSError as error:
            logger.warning("Could not remember trust of %s in %s: %s", plugin_file.path, store.path, error)
        return True
    return decision == TrustDecision.ONCE


def command_line(server: McpServerConfig) -> str:
    """How a server is shown to whoever decides on it: ``<name>: <command> <arguments>`` (shell-quoted), or
    ``<name>: <url>`` for http and sse servers."""
    if server.transport != "stdio":
        return f"{server.name}: {server.transport} {server.url or ''}"
    return f"{server.name}: {shlex.join([server.command or '', *server.arguments])}"
