"""One TLS context per process for the OpenAI SDK's HTTP clients: loading the CA store costs about 40 ms a client."""

from __future__ import annotations

import functools
import os
import ssl


def tls_context() -> ssl.SSLContext:
    """The context the SDK would build for itself (the system CA store, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), built
    once per process and per value of those variables.

    The warm process builds it before it forks, so a run forked from it pays nothing for it.
    """
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    import httpx2

    # The variables are read inside create_ssl_context; they are the cache key, so the context matches them.
    del cafile, capath
    return httpx2.create_ssl_context()
