"""One TLS context per process for the OpenAI SDK's HTTP clients, whose CA store loads at the first TLS handshake."""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
import ssl
import sys
import threading
from collections.abc import Callable

CA_FILE_CANDIDATES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)
"""httpcore2's (truststore's) Linux fallbacks for when OpenSSL's compiled-in paths are unusable, in its order."""

_HASHED_NAME = re.compile(r"[0-9a-fA-F]{8}\.\d")

TrustLoader = Callable[[ssl.SSLContext], None]
"""Loads the trusted CA certificates into the context it is given."""


class TrustLoadError(ssl.SSLError):
    """The trusted CA certificates could not be loaded (a missing or unreadable ``SSL_CERT_FILE``, say)."""


class LazyTrustContext(ssl.SSLContext):
    """A client context (``CERT_REQUIRED``, host names checked) that loads its trusted CAs once, just before its first
    connection is wrapped.

    Loading a CA bundle costs about 60 ms of CPU; a run against an ``http://`` endpoint never pays it. Every TLS
    connection of the SDK's transports starts with :meth:`wrap_bio` (asyncio, anyio) or :meth:`wrap_socket` (sync
    sockets); a path that wrapped a connection some other way would find no CA loaded and fail closed.

    Args:
        load: Loads the trust into this context; called once, under a lock, by :meth:`load_trust`.
        source: What the trust is, for the error when loading fails.
    """

    def __new__(cls, load: TrustLoader, source: str) -> LazyTrustContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, load: TrustLoader, source: str) -> None:
        super().__init__()
        self._load = load
        self._source = source
        self._lock = threading.Lock()
        self._loaded = False

    @property
    def trust_loaded(self) -> bool:
        """Whether the trusted CAs are loaded."""
        return self._loaded

    def load_trust(self) -> None:
        """Load the trusted CAs now unless they are loaded; concurrent callers wait for one load.

        Raises:
            TrustLoadError: They could not be loaded; the context stays without them and the next call tries again.
        """
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            try:
                self._load(self)
            except OSError as exc:  # ssl.SSLError is one
                raise TrustLoadError(f"could not load the trusted CA certificates ({self._source}): {exc}") from exc
            self._loaded = True

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        self.load_trust()
        return super().wrap_socket(
            sock,
            server_side=server_side,
            do_handshake_on_connect=do_handshake_on_connect,
            suppress_ragged_eofs=suppress_ragged_eofs,
            server_hostname=server_hostname,
            session=session,
        )

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        self.load_trust()
        return super().wrap_bio(
            incoming, outgoing, server_side=server_side, server_hostname=server_hostname, session=session
        )


def tls_context() -> ssl.SSLContext:
    """The context the SDK would build for itself (``httpcore2.default_ssl_context``: ``SSL_CERT_FILE``, else
    ``SSL_CERT_DIR``, else the system's CAs), built once per process and per value of those variables.

    Where the SDK reads CA files (Linux and the like, or either variable set) the files are read at the first TLS
    handshake, not here; on Windows and macOS it asks the system (truststore) and is built as the SDK builds it.
    """
    return _context(*trust_environment())


def load_tls_trust() -> ssl.SSLContext:
    """:func:`tls_context` with its trusted CAs loaded now: the warm process calls it before it forks, so a run forked
    from it pays nothing for them.

    Raises:
        TrustLoadError: They could not be loaded.
    """
    context = tls_context()
    if isinstance(context, LazyTrustContext):
        context.load_trust()
    return context


def trust_environment() -> tuple[str | None, str | None, str | None]:
    """``(SSL_CERT_FILE, SSL_CERT_DIR, SSLKEYLOGFILE)`` as the SDK reads them: empty is unset, and the key log file
    counts only where a variable names the CAs (only ``ssl.create_default_context`` reads it)."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    keylog = os.environ.get("SSLKEYLOGFILE") or None
    if sys.flags.ignore_environment or not (cafile or capath):
        keylog = None
    return cafile, capath, keylog


def new_tls_context(cafile: str | None, capath: str | None, keylog: str | None) -> ssl.SSLContext:
    """A new context with the trust ``httpcore2.default_ssl_context`` gives for these variables, loaded lazily where
    it comes from files.

    Mirrors that function (httpcore2 2.16; tests compare the two): ``SSL_CERT_FILE`` or else ``SSL_CERT_DIR`` gives
    ``ssl.create_default_context(cafile=...)`` / ``(capath=...)``; Windows and macOS give truststore; elsewhere
    OpenSSL's compiled-in paths (:func:`load_compiled_in_trust`).
    """
    if cafile or capath:
        if cafile:
            context = LazyTrustContext(functools.partial(_load_locations, cafile, None), f"SSL_CERT_FILE={cafile}")
        else:
            context = LazyTrustContext(functools.partial(_load_locations, None, capath), f"SSL_CERT_DIR={capath}")
        # What ssl.create_default_context sets besides the CAs on a PROTOCOL_TLS_CLIENT context (Python 3.11 to 3.13).
        if sys.version_info >= (3, 13):
            context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        if keylog:
            context.keylog_filename = keylog
        return context
    if platform.system() in ("Windows", "Darwin"):
        import httpx2

        return httpx2.create_ssl_context()
    return LazyTrustContext(load_compiled_in_trust, "the system's CA certificates")


def load_compiled_in_trust(context: ssl.SSLContext) -> None:
    """Load OpenSSL's compiled-in CA file and directory (not ``SSL_CERT_*``), falling back to the usual bundle files,
    as ``httpcore2.default_ssl_context`` does on Linux. Nothing found loads nothing: every handshake then fails."""
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if capath and not cafile and not any(_HASHED_NAME.fullmatch(name) for name in os.listdir(capath)):
        capath = None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, CA_FILE_CANDIDATES), None)
    if cafile or capath:
        context.load_verify_locations(cafile, capath)


def _load_locations(cafile: str | None, capath: str | None, context: ssl.SSLContext) -> None:
    context.load_verify_locations(cafile, capath)


_context = functools.cache(new_tls_context)
