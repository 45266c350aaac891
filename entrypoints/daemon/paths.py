"""Where the warm process listens: a private per-user directory, checked before every use.

Stdlib only and cheap: the client runs this before importing anything heavy.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # not typing's: the client must not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

SOCKET_NAME = "ironhive.sock"
LOCK_NAME = "server.lock"
LOG_NAME = "server.log"
MAX_SOCKET_PATH = 107
"""``sun_path`` holds 108 bytes on Linux, the last one a NUL."""

SHORT_ROOT = "/tmp"
"""Where a directory named by uid goes when the usual one makes the socket path too long."""


class UnsafeDirectoryError(OSError):
    """The runtime directory is not a directory owned by this user with mode 0700."""


def runtime_directory(environ: Mapping[str, str], home: str, uid: int) -> str:
    """The directory of this user's warm process (not created here).

    ``$XDG_RUNTIME_DIR/ironhive`` when that variable names an absolute directory owned by the user, else
    ``~/.ironhive/run``; when the socket path in it would not fit ``sun_path``, ``/tmp/ironhive-<uid>``.

    Args:
        environ: The process environment.
        home: The user's home directory.
        uid: The user's id.

    Returns:
        The directory's path.
    """
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    directory = os.path.join(home, ".ironhive", "run")
    if os.path.isabs(runtime):
        try:
            info = os.stat(runtime)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
            directory = os.path.join(runtime, "ironhive")
    if len(os.fsencode(socket_path(directory))) > MAX_SOCKET_PATH:
        directory = os.path.join(SHORT_ROOT, f"ironhive-{uid}")
    return directory


def socket_path(directory: str) -> str:
    """The socket's path in ``directory``."""
    return os.path.join(directory, SOCKET_NAME)


def check_private_directory(directory: str, uid: int) -> None:
    """Check that ``directory`` is a real directory (not a link) owned by ``uid`` that nobody else may enter.

    Raises:
        UnsafeDirectoryError: It is a link or not a directory, another user owns it, or its mode is not 0700.
        FileNotFoundError: It does not exist.
    """
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectoryError(f"{directory} is not a directory")
    if info.st_uid != uid:
        raise UnsafeDirectoryError(f"{directory} belongs to another user (uid {info.st_uid})")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafeDirectoryError(f"{directory} may be entered by others (mode {stat.S_IMODE(info.st_mode):o})")


def ensure_private_directory(directory: str, uid: int) -> None:
    """Create ``directory`` (and a missing parent) with mode 0700 unless it exists, then check it.

    An existing directory is never loosened or taken over: one owned by another user or with a loose mode is refused.

    Raises:
        UnsafeDirectoryError: The directory exists but is not private to ``uid``.
        OSError: It cannot be created.
    """
    parent = os.path.dirname(directory)
    if parent != SHORT_ROOT and not os.path.isdir(parent):
        os.makedirs(parent, mode=0o700, exist_ok=True)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    else:
        os.chmod(directory, 0o700)  # the umask may have taken bits away, never added any: make it exactly 0700
    check_private_directory(directory, uid)
