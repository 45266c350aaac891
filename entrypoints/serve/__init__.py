"""``ironhive serve`` and ``ironhive worker``: many sessions over HTTP/SSE, in one process or on Redis."""
