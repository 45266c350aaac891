"""Server runners: the stdio and HTTP/SSE transports of the turn-stream protocol, and approvals over the wire."""
