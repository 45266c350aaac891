"""Domain: the agent loop, tool invocation, permissions, context handling and the error tree."""
