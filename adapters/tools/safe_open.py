"""Opening a resolved path without following symbolic links: one component at a time from ``/``, with ``O_NOFOLLOW``.

The paths given here are canonical (``ResolvedPath.full``: no ``.``, ``..`` or link in them when they were judged), so
a link met on the way is one the permission rules did not see: it appeared after judging, and the open fails rather
than follow it. Each step opens the next component relative to the directory opened before (``openat`` with
``dir_fd``), so no component can be swapped between being checked and being used. POSIX only (``dir_fd`` and
``O_NOFOLLOW``), as the rest of the tools are.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import PurePath

from ironhive.domain.errors import ToolError

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_READ_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
# O_PATH (Linux) passes through a directory without needing permission to read it, as path lookup does.
_PASS_THROUGH = _READ_DIRECTORY | getattr(os, "O_PATH", 0)


class LinkAppearedError(ToolError):
    """A symbolic link stood where the judged, canonical path had none: the path changed after it was judged."""

    def __init__(self, shown: str) -> None:
        super().__init__(
            f"'{shown}' changed after it was judged: a symbolic link now stands on the way, and it is not followed. "
            "Nothing was done."
        )


def open_file(full: str, flags: int, shown: str, *, mode: int = 0o666, create_parents: bool = False) -> int:
    """Open the file at the canonical path ``full`` without following any link, its last component included.

    Args:
        full: The canonical absolute path.
        flags: ``os.open`` flags (``O_NOFOLLOW`` and ``O_CLOEXEC`` are added).
        shown: The path as the model wrote it, for error messages.
        mode: The permission bits of a file ``O_CREAT`` creates.
        create_parents: Create missing directories on the way (each created one is opened without following links).

    Returns:
        The open file descriptor; the caller closes it.

    Raises:
        LinkAppearedError: A component is a symbolic link.
        OSError: The file cannot be opened (``filename`` is ``full``).
    """
    parent, name = open_parent(full, shown, create=create_parents)
    try:
        return _open_at(parent, name, flags | _NOFOLLOW, full, shown, mode=mode)
    finally:
        os.close(parent)


def open_directory(full: str, shown: str) -> int:
    """Open the directory at the canonical path ``full`` for reading (listing, walking), following no link.

    Raises:
        LinkAppearedError: A component is a symbolic link.
        OSError: It is missing or not a directory (``filename`` is ``full``).
    """
    parent, name = open_parent(full, shown)
    if not name:
        return parent  # the filesystem root itself
    try:
        return _open_at(parent, name, _READ_DIRECTORY, full, shown)
    finally:
        os.close(parent)


def open_parent(full: str, shown: str, *, create: bool = False) -> tuple[int, str]:
    """Open the directory that holds the canonical path ``full``, following no link; return it and the last name.

    The descriptor may be an ``O_PATH`` one: good for ``dir_fd`` (open, stat, unlink, mkdir), not for reading.

    Raises:
        LinkAppearedError: A component on the way is a symbolic link.
        OSError: A directory on the way is missing (and not ``create``) or is not a directory.
    """
    parts = PurePath(full).parts
    if not parts or parts[0] != os.sep:
        raise ValueError(f"not an absolute POSIX path: {full!r}")
    directory = os.open(os.sep, _PASS_THROUGH)
    try:
        for name in parts[1:-1]:
            following = _step(directory, name, full, shown, create=create)
            os.close(directory)
            directory = following
    except BaseException:
        os.close(directory)
        raise
    return directory, parts[-1] if len(parts) > 1 else ""


def _step(directory: int, name: str, full: str, shown: str, *, create: bool) -> int:
    try:
        return _open_at(directory, name, _PASS_THROUGH, full, shown)
    except FileNotFoundError:
        if not create:
            raise
    # Made meanwhile by someone else: the open below still refuses it if it is a link.
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=directory)
    return _open_at(directory, name, _PASS_THROUGH, full, shown)


def _open_at(directory: int, name: str, flags: int, full: str, shown: str, *, mode: int = 0o666) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=directory)
    except OSError as exc:
        # ELOOP: a link as the last component under O_NOFOLLOW; ENOTDIR: one where a directory was required.
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(directory, name):
            raise LinkAppearedError(shown) from None
        raise OSError(exc.errno, exc.strerror, full) from None


def _is_link(directory: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False
