"""The MCP client: plugin files, their trust, and MCP servers' tools as ironhive tools."""
