"""DeferredTool: a tool offered by its spec alone, its implementation imported and built at its first call."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ironhive.ports.chat import JsonValue, ToolSpec
from ironhive.ports.tools import Tool


class DeferredTool:
    """Offers ``spec`` to the model and builds the tool itself, with ``build``, when the model first calls it.

    For a tool whose implementation imports much (a parser, an HTTP stack) that most runs never call: offering it
    costs its spec only. ``build`` must give a tool with this very spec (its module and the spec's share the
    constants); the built tool serves every later call.

    Args:
        spec: The tool's name, description and JSON schema.
        build: Imports the implementation and returns the tool.
    """

    def __init__(self, spec: ToolSpec, build: Callable[[], Tool]) -> None:
        self._spec = spec
        self._build = build
        self._tool: Tool | None = None

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema."""
        return self._spec

    @property
    def built(self) -> bool:
        """Whether a call has built the tool yet."""
        return self._tool is not None

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Build the tool on the first call, then run it (see :meth:`ironhive.ports.tools.Tool.invoke`)."""
        if self._tool is None:
            self._tool = self._build()
        return await self._tool.invoke(arguments)
