"""Path resolution, once per call: where a tool's path argument really points, shared by the rules and the tool.

The policy judges a path by ``resolve_target`` and the tool acts on the same ``ResolvedPath``: every resolution made
while judging is remembered in the current context (the asyncio task that runs the call, and the threads it hands
work to), and ``judged_path`` gives the tool that very resolution instead of a second one that a symbolic link
swapped in meanwhile could redirect. The tool then opens the canonical path without following any link (see
``ironhive.adapters.tools.safe_open``), so a link that appears after judging makes the call fail instead.
"""

from __future__ import annotations

import os
import stat
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import PurePath

_REMEMBERED = 32
"""How many recent resolutions a context keeps: a call judges a handful of paths and its tool runs right after."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PathTarget:
    """A path argument resolved for judging.

    Attributes:
        match_path: What the rule patterns are matched against: the POSIX path relative to the working directory, or
            the absolute resolved path when ``external``; a trailing ``/`` when it names a directory. Empty for the
            working directory itself.
        external: Whether the path resolves outside the working directory (or is a hard-linked file, which may be).
    """

    match_path: str
    external: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedPath:
    """A path argument resolved to the one place a tool may act on.

    Attributes:
        full: The canonical absolute path: no ``.``, ``..`` or symbolic link in it (when ``follow_last`` is false,
            its last component may itself be a link, which is then what the call acts on).
        external: Whether it counts as outside the working directory.
        linked: Whether it was a regular file with more than one name (``st_nlink > 1``) when resolved.
        directory: Whether it was a directory when resolved.
    """

    full: str
    external: bool
    linked: bool = False
    directory: bool = False


_Key = tuple[str, str, bool]
_JUDGED: ContextVar[tuple[tuple[_Key, ResolvedPath], ...]] = ContextVar("ironhive_judged_paths", default=())


def resolve_root(root: str | os.PathLike[str]) -> str:
    """Resolve the working directory once: absolute, symlinks followed."""
    return os.path.realpath(os.fspath(root))


def resolve_path(root: str, path: str, *, follow_last: bool = True) -> ResolvedPath | None:
    """Resolve ``path`` against the resolved working directory ``root``, the way the rules and the tools both see it.

    ``..`` segments, absolute paths and symlinks (of the file itself or of any directory on the way) are all followed,
    so every spelling of one file gets one answer and a symlink inside the project that points outside is outside. A
    leading ``~`` is the home directory. A regular file with more than one name counts as outside: its other name may
    be anywhere on the same filesystem, so its being inside the project says nothing.

    Args:
        root: The working directory, already passed through ``resolve_root``.
        path: The tool's path argument.
        follow_last: Follow a symbolic link in the last component (a delete acts on the link itself, not on what it
            points to).

    Returns:
        The resolution, or ``None`` for a path the system cannot resolve (an embedded NUL, say).
    """
    try:
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        joined = os.path.join(root, expanded)
        head, tail = os.path.split(joined)
        if follow_last or tail in ("", ".", ".."):
            full = os.path.realpath(joined)
        else:
            full = os.path.join(os.path.realpath(head), tail)
        try:
            status = os.stat(full, follow_symlinks=follow_last)
        except OSError:
            status = None
    except (ValueError, OSError):
        return None
    directory = status is not None and stat.S_ISDIR(status.st_mode)
    linked = status is not None and stat.S_ISREG(status.st_mode) and status.st_nlink > 1
    inside = full == root or PurePath(full).is_relative_to(root)
    return ResolvedPath(full=full, external=linked or not inside, linked=linked, directory=directory)


def resolve_target(root: str, path: str, *, directory: bool = False, follow_last: bool = True) -> PathTarget:
    """Resolve ``path`` against the resolved working directory ``root`` for judging (see ``resolve_path``).

    The resolution is remembered in the current context, so the tool that runs this call acts on exactly this path
    (``judged_path``).

    Args:
        root: The working directory, already passed through ``resolve_root``.
        path: The tool's path argument.
        directory: Judge the path as a directory even when it does not exist (directory tools).
        follow_last: Follow a symbolic link in the last component (false for deletes).

    Returns:
        The target to match rules against.
    """
    resolved = resolve_path(root, path, follow_last=follow_last)
    if resolved is None:
        # Not a path the system can resolve: certainly not one known to be inside.
        return PathTarget(match_path=path.replace("\\", "/"), external=True)
    _remember((root, path, follow_last), resolved)
    is_directory = directory or resolved.directory
    full = resolved.full
    if full == root and not resolved.external:
        return PathTarget(match_path="", external=False)
    if not resolved.external:
        relative = PurePath(full).relative_to(root).as_posix()
        return PathTarget(match_path=relative + "/" if is_directory else relative, external=False)
    absolute = PurePath(full).as_posix()
    return PathTarget(match_path=absolute.rstrip("/") + "/" if is_directory else absolute, external=True)


def judged_path(root: str, path: str, *, follow_last: bool = True) -> ResolvedPath | None:
    """The resolution the rules judged ``path`` by in this context, or ``None`` when they have not judged it.

    Args:
        root: The working directory, already passed through ``resolve_root``.
        path: The tool's path argument, exactly as judged.
        follow_last: As passed when judging.
    """
    key = (root, path, follow_last)
    for remembered, resolved in reversed(_JUDGED.get()):
        if remembered == key:
            return resolved
    return None


def _remember(key: _Key, resolved: ResolvedPath) -> None:
    # An immutable tuple set anew: a context copied into another task or thread never sees this one's later records.
    kept = tuple(entry for entry in _JUDGED.get() if entry[0] != key)[-(_REMEMBERED - 1) :]
    _JUDGED.set((*kept, (key, resolved)))
