"""The Tool and ToolProvider ports: what the model can call, and where tools come from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from ironhive.ports.chat import JsonValue, ToolSpec


@runtime_checkable
class Tool(Protocol):
    """A function the model may call."""

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema, as the model sees them."""
        ...

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Run the tool.

        Args:
            arguments: The arguments the model sent, parsed from JSON.

        Returns:
            The text the model reads as the tool's result.

        Raises:
            ToolArgumentError: The arguments do not fit the tool's parameters.
            ToolError: The tool ran and failed; the message is shown to the model.
        """
        ...


@runtime_checkable
class ToolProvider(Protocol):
    """A source of tools (the built-in set, an MCP server, ...)."""

    async def get_tools(self) -> Sequence[Tool]:
        """Return the tools this provider offers now."""
        ...
