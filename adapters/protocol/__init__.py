"""Turn-stream wire protocol (JSON lines between a client and the agent): models, codec and type registry."""
