"""An MCP server over stdio whose process exits in the middle of the Nth ``count`` call (``--crash-after N``).

Each process appends its pid to the file named by ``MCP_TEST_PID_FILE`` when that variable is set.
"""

from __future__ import annotations

import argparse
import os

from mcp.server.mcpserver import MCPServer


def main() -> None:
    """Run the server on stdin/stdout."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--crash-after", type=int, default=2)
    crash_after: int = parser.parse_args().crash_after
    pid_file = os.environ.get("MCP_TEST_PID_FILE")
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as stream:
            stream.write(f"{os.getpid()}\n")

    server = MCPServer("crashing")
    calls = 0

    @server.tool()
    def count() -> str:
        """Count calls; the process dies during call number ``--crash-after``."""
        nonlocal calls
        calls += 1
        if calls >= crash_after:
            os._exit(3)
        return f"call {calls} in process {os.getpid()}"

    server.run("stdio")


if __name__ == "__main__":
    main()
