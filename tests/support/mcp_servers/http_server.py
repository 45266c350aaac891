"""An MCP server over streamable HTTP (or SSE with ``--sse``) on 127.0.0.1; prints its port on stdout when listening.

The port is ``--port`` or, by default, chosen by the system (the socket is bound before uvicorn starts, so there is no
race for it).
"""

from __future__ import annotations

import argparse
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer


def main() -> None:
    """Serve until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    use_sse: bool = options.sse

    server = MCPServer("loopback", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return f"echo: {text}"

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of a request header, or '(none)'."""
        headers = ctx.headers or {}
        return headers.get(name.lower(), "(none)")

    @server.tool()
    async def hang() -> str:
        """Never return."""
        await anyio.sleep_forever()
        return "unreachable"

    app = server.sse_app() if use_sse else server.streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", options.port))
    sock.listen(64)
    sys.stdout.write(f"{sock.getsockname()[1]}\n")
    sys.stdout.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
