"""Turn-stream wire protocol (JSON lines between a client and the agent), importable without the agent."""
