"""Atomic file writes: a temporary file beside the target, fsync, rename over it, fsync the folder."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

PRIVATE_MODE = 0o600
"""The mode of a file written with ``private=True``: owner read and write only."""

_SHARED_MODE = 0o666
"""The mode a new file is created with when not private; the umask takes from it as for any new file."""

_ATTEMPTS = 100
_TEMPORARY_HEX_BYTES = 6
_TEMPORARY_NAME = re.compile(rf"\..+\.[0-9a-f]{{{2 * _TEMPORARY_HEX_BYTES}}}\.tmp", re.DOTALL)


@contextlib.contextmanager
def atomic_writer(path: Path, *, private: bool = False, durable: bool = True) -> Iterator[BinaryIO]:
    """Write ``path`` through a binary stream so that readers see either the old content or the whole new one.

    The stream writes a temporary file in the same folder (so the rename stays on one file system). When the block
    ends normally the file is flushed and fsynced, renamed over ``path`` and the folder is fsynced, so the rename
    survives a crash. When the block raises, the temporary file is removed and ``path`` is left as it was.

    The folder must exist. The new file's mode: 0600 with ``private`` (from creation: no moment in which others may
    read it); otherwise an existing ``path``'s mode, or the default of a new file under the umask.

    Args:
        path: The target file.
        private: Make the file readable and writable by its owner only.
        durable: fsync the file and the folder. A cache whose entries are checked on reading and rebuilt when
            damaged leaves it off: readers still never see a half-written file, and the write costs no disk flush.

    Yields:
        The stream to write the new content to.

    Raises:
        OSError: The temporary file cannot be created, written, synced or renamed.
    """
    descriptor, temporary = _create_temporary(path, PRIVATE_MODE if private else _SHARED_MODE)
    try:
        if not private:
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(descriptor, _permission_bits(path.stat().st_mode))
        with os.fdopen(descriptor, "wb") as stream:
            descriptor = -1  # the stream owns it now
            yield stream
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if descriptor >= 0:
            os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        sync_directory(path.parent)


def write_atomically(path: Path, data: bytes | str, *, private: bool = False, durable: bool = True) -> None:
    """Replace ``path``'s content with ``data`` (text is written as UTF-8) atomically; see :func:`atomic_writer`.

    Raises:
        OSError: The file cannot be written.
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_writer(path, private=private, durable=durable) as stream:
        stream.write(content)


def is_temporary(name: str) -> bool:
    """Whether a file name is one of this module's temporary files (left behind only by a process killed mid-write)."""
    return _TEMPORARY_NAME.fullmatch(name) is not None


def sync_directory(directory: Path) -> None:
    """fsync a folder, so a rename or a new file in it is on disk; nothing where folders cannot be opened (Windows)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        descriptor = os.open(directory, flags)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder; the rename is done anyway
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _create_temporary(path: Path, mode: int) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(_ATTEMPTS):
        temporary = str(path.with_name(f".{path.name}.{secrets.token_hex(_TEMPORARY_HEX_BYTES)}.tmp"))
        try:
            descriptor = os.open(temporary, flags, mode)
        except FileExistsError:
            continue
        if mode == PRIVATE_MODE:
            try:
                os.fchmod(descriptor, PRIVATE_MODE)  # a umask that took owner bits away is undone
            except OSError:
                os.close(descriptor)
                os.unlink(temporary)
                raise
        return descriptor, temporary
    raise FileExistsError(f"Cannot create a temporary file beside {path}")


def _permission_bits(mode: int) -> int:
    return mode & 0o7777
