"""Owner-only files under ``~/.ironhive``: folders 0700 and files 0600 from creation, and repairing wrong modes.

Everything ironhive keeps there may hold a secret (config keys, a key read from ``.env`` into a session, tool
arguments in the execution logs), so nothing in it is readable by the group or others:

- folders are created with mode 0700 and files opened with mode 0600 (``os.open``), so no moment exists in which a
  file is readable by others; a ``chmod`` follows only when the umask took owner bits away;
- :func:`secure_user_directory` runs at start-up and repairs the cheap part: ``~/.ironhive`` itself and what lies
  directly in it; each writer repairs the files it opens (a session store, a log);
- :func:`exposed_paths` and :func:`restrict_tree` walk the whole tree for ``ironhive doctor`` and ``doctor --fix``.

Symbolic links are neither followed nor changed (``chmod`` would change their target, which may lie elsewhere).
POSIX modes do not apply on Windows, where every function here does nothing.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700
GROUP_OR_OTHER = stat.S_IRWXG | stat.S_IRWXO

_POSIX = os.name != "nt"


def user_directory(home: Path) -> Path:
    """``<home>/.ironhive``."""
    return home / ".ironhive"


def make_private_directory(path: Path) -> None:
    """Create ``path`` and its missing parents with mode 0700; an existing ``path`` open to others is restricted.

    Parents that exist already are left as they are (the home directory is not ironhive's to change).

    Raises:
        OSError: A folder cannot be created or restricted.
    """
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first; it is restricted below
            directory.mkdir(mode=PRIVATE_DIRECTORY_MODE)
        _restrict(directory, PRIVATE_DIRECTORY_MODE)
    if not missing:
        _restrict(path, PRIVATE_DIRECTORY_MODE)


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT, 0o600)``; a file that existed with group or other bits is restricted.

    Returns:
        The open descriptor.

    Raises:
        OSError: The file cannot be opened or restricted.
    """
    descriptor = os.open(path, flags | os.O_CREAT, PRIVATE_FILE_MODE)
    if _POSIX:
        try:
            mode = os.fstat(descriptor).st_mode
            if stat.S_ISREG(mode) and stat.S_IMODE(mode) & GROUP_OR_OTHER:
                os.fchmod(descriptor, stat.S_IMODE(mode) & ~GROUP_OR_OTHER | stat.S_IRUSR | stat.S_IWUSR)
        except OSError:
            os.close(descriptor)
            raise
    return descriptor


def restrict_file(path: Path) -> bool:
    """Take the group and other bits off an existing regular file (not a link); whether its mode changed."""
    return _restrict(path, PRIVATE_FILE_MODE)


def secure_user_directory(home: Path) -> list[Path]:
    """Start-up repair: ``~/.ironhive`` and what lies directly in it become owner-only (deeper paths: the doctor).

    Failures are ignored: a folder ironhive cannot change must not stop a run (``ironhive doctor`` reports it).

    Returns:
        The paths whose mode changed.
    """
    root = user_directory(home)
    if not _POSIX or not root.is_dir() or root.is_symlink():
        return []
    changed = [root] if _quietly_restrict(root) else []
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        changed.extend(Path(entry.path) for entry in entries if _quietly_restrict(Path(entry.path)))
    return changed


def exposed_paths(home: Path) -> list[Path]:
    """Every folder and file under ``~/.ironhive`` (itself included) the group or others may access, sorted."""
    return [path for path in _walk(user_directory(home)) if _exposed(path)]


def restrict_tree(home: Path) -> list[Path]:
    """Make every folder under ``~/.ironhive`` 0700 and every file 0600 at most; the paths changed, sorted.

    Raises:
        OSError: A path cannot be restricted.
    """
    return [path for path in _walk(user_directory(home)) if _restrict(path, _private_mode(path))]


def _walk(root: Path) -> list[Path]:
    if not _POSIX or not root.is_dir() or root.is_symlink():
        return []
    found = [root]
    for directory, folders, files in os.walk(root):  # os.walk does not descend into linked folders
        found.extend(Path(directory, name) for name in (*folders, *files))
    return sorted(path for path in found if not path.is_symlink())


def _exposed(path: Path) -> bool:
    try:
        return bool(stat.S_IMODE(path.lstat().st_mode) & GROUP_OR_OTHER)
    except OSError:
        return False


def _private_mode(path: Path) -> int:
    return PRIVATE_DIRECTORY_MODE if path.is_dir() else PRIVATE_FILE_MODE


def _quietly_restrict(path: Path) -> bool:
    try:
        return _restrict(path, _private_mode(path))
    except OSError:
        return False


def _restrict(path: Path, wanted: int) -> bool:
    """Remove group/other bits (and give the owner ``wanted``'s bits when the umask took them); whether it changed."""
    if not _POSIX:
        return False
    try:
        status = path.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(status.st_mode):
        return False
    mode = stat.S_IMODE(status.st_mode)
    private = (mode & ~GROUP_OR_OTHER) | (wanted & stat.S_IRWXU)
    if private == mode:
        return False
    os.chmod(path, private)
    return True
