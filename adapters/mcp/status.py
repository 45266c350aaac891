"""McpServerStatus: one MCP server's health as ``doctor`` and ``ironhive mcp list`` show it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

ServerState: TypeAlias = Literal["connected", "disconnected", "failed", "untrusted", "not_started"]
"""``connected``: tools listed and usable. ``disconnected``: it was connected and died (restarted on the next call
when ``autoReconnect``). ``failed``: it did not start or answer within its timeout. ``untrusted``: a stdio plugin of a
project file nobody trusted; its process never ran. ``not_started``: ``autoConnect`` is off and nothing asked yet."""


@dataclass(frozen=True, kw_only=True, slots=True)
class McpServerStatus:
    """One MCP server's state.

    Attributes:
        name: The plugin's name.
        transport: ``stdio``, ``http`` or ``sse``.
        state: See ``ServerState``.
        tool_count: How many tools it offers (its last successful listing; 0 when it never listed).
        last_error: What went wrong last (start-up failure, timeout, exit, trust), or ``None``.
        source: The plugin file it comes from, when known.
    """

    name: str
    transport: str
    state: ServerState
    tool_count: int = 0
    last_error: str | None = None
    source: Path | None = None

    @property
    def connected(self) -> bool:
        """Whether its tools can be called now."""
        return self.state == "connected"
