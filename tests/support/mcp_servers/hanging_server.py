"""An MCP server over stdio whose ``hang`` tool never answers and whose ``slow`` tool reports progress while it works.

``--silent``: answer nothing at all (not even ``initialize``) and exit when stdin closes.
"""

from __future__ import annotations

import argparse
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer


def main() -> None:
    """Run the server on stdin/stdout."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--silent", action="store_true")
    if parser.parse_args().silent:
        for _ in sys.stdin:
            pass
        return

    server = MCPServer("hanging")

    @server.tool()
    async def hang() -> str:
        """Never return."""
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool()
    async def slow(seconds: float, interval: float, ctx: Context) -> str:
        """Work for ``seconds``, reporting progress every ``interval`` seconds."""
        steps = max(1, round(seconds / interval))
        for step in range(1, steps + 1):
            await anyio.sleep(interval)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"done after {steps} progress updates"

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    server.run("stdio")


if __name__ == "__main__":
    main()
