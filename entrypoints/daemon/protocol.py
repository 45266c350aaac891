"""The warm process's wire: length-prefixed ``marshal`` frames on a Unix socket, and the keys both sides compare.

``marshal`` and ``_socket`` keep the client light (``json`` and ``socket`` cost milliseconds to import); both ends
run the same interpreter, which the compatibility key checks, and the peer is always the same user.
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

# Not typing.TYPE_CHECKING: typing (and collections.abc) cost the client milliseconds it exists to save.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeAlias

    Message: TypeAlias = dict[str, Any]

PROTOCOL = 1
HEADER = 4
MAX_FRAME = 16 << 20
IMPORT_TIME_VARIABLES = (
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "OPENAI_LOG",
    "ANTHROPIC_LOG",
    "AIOHTTP_NO_EXTENSIONS",
    "AIOHTTP_NOSENDFILE",
)
"""Variables read once, at interpreter start or at import, besides ``PYTHON*``: a run may only be forked from a
process that started with the same values."""


class ProtocolError(OSError):
    """The peer closed the connection or sent something unreadable."""


def encode(message: Message) -> bytes:
    """One frame: a 4-byte big-endian length, then the marshalled message."""
    body = marshal.dumps(message)
    return len(body).to_bytes(HEADER, "big") + body


def send(sock: _socket.socket, message: Message, fds: list[int] | None = None) -> None:
    """Send one frame, with ``fds`` attached as ``SCM_RIGHTS`` when given."""
    frame = encode(message)
    if fds:
        ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds))]
        sent = sock.sendmsg([frame], ancillary)
        frame = frame[sent:]
    if frame:
        sock.sendall(frame)


def receive(sock: _socket.socket, first: bytes = b"") -> Message:
    """Read one frame (``first``: bytes of it already read) and return its message.

    Raises:
        ProtocolError: The connection ended first or the frame is not a message.
    """
    data = _read_exactly(sock, HEADER, first)
    length = int.from_bytes(data[:HEADER], "big")
    if length > MAX_FRAME:
        raise ProtocolError("frame too large")
    body = _read_exactly(sock, HEADER + length, data)[HEADER:]
    try:
        message = marshal.loads(body)
    except (EOFError, ValueError, TypeError) as error:
        raise ProtocolError("unreadable frame") from error
    if not isinstance(message, dict):
        raise ProtocolError("unreadable frame")
    return message


def _read_exactly(sock: _socket.socket, size: int, data: bytes) -> bytes:
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ProtocolError("connection closed")
        data += chunk
    return data


def peer_uid(sock: _socket.socket) -> int:
    """The user id of the process at the other end (``SO_PEERCRED``)."""
    credentials = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(credentials[4:8], sys.byteorder)


def compatibility_key(environ: Mapping[str, str]) -> Message:
    """What must match for a forked child to behave as this interpreter would: executable, flags, ``sys.path`` and
    the variables read at start-up or import."""
    variables = {
        name: value for name, value in environ.items() if name.startswith("PYTHON") or name in IMPORT_TIME_VARIABLES
    }
    return {"executable": sys.executable, "flags": tuple(sys.flags), "path": tuple(sys.path), "variables": variables}


def install_fingerprint(version: str) -> Message:
    """What changes when ironhive or a dependency is installed, upgraded or removed: the version and the
    modification times of the ``sys.path`` directories (site-packages among them) and of the ``ironhive`` package."""
    import ironhive

    directories = [entry for entry in sys.path if entry] + [os.path.dirname(ironhive.__file__ or "")]
    stamps = []
    for directory in directories:
        try:
            stamps.append(os.stat(directory).st_mtime_ns)
        except OSError:
            stamps.append(0)
    return {"protocol": PROTOCOL, "version": version, "stamps": tuple(stamps)}
