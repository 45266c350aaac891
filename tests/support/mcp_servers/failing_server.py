"""An MCP server over stdio whose ``fail`` tool returns an ``isError`` result and whose other tools return odd content.

When ``MCP_TEST_MARKER`` is set the process creates that file first: proof that it was started.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ContentBlock, EmbeddedResource, ImageContent, TextContent, TextResourceContents


def main() -> None:
    """Run the server on stdin/stdout."""
    marker = os.environ.get("MCP_TEST_MARKER")
    if marker:
        Path(marker).write_text(f"{os.getpid()}\n", encoding="utf-8")

    server = MCPServer("failing")

    @server.tool()
    def fail(reason: str) -> str:
        """Fail with ``reason``."""
        raise ToolError(reason)

    @server.tool()
    def mixed() -> list[ContentBlock]:
        """Two text blocks around an image and an embedded text resource."""
        return [
            TextContent(text="first line"),
            ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt", text="embedded notes")),
            TextContent(text="last line"),
        ]

    @server.tool(name="odd.name/with spaces", description="A tool whose name needs cleaning.")
    def odd() -> str:
        return "odd ok"

    @server.tool(name="t" * 70, description="A tool whose name is too long.")
    def long_name() -> str:
        return "long ok"

    @server.tool()
    def environment(name: str) -> str:
        """The value of an environment variable of the server process, or '(unset)'."""
        return os.environ.get(name, "(unset)")

    @server.tool()
    def cwd() -> str:
        """The server's working directory."""
        return os.getcwd()

    server.run("stdio")


if __name__ == "__main__":
    main()
