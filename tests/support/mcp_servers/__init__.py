"""Small MCP servers for the MCP client's tests, written with the ``mcp`` SDK's server API; each runs as a script."""
