"""Path resolution for path rules: where a tool's path argument really points, relative to the working directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True, kw_only=True, slots=True)
class PathTarget:
    """A path argument resolved for judging.

    Attributes:
        match_path: What the rule patterns are matched against: the POSIX path relative to the working directory, or
            the absolute resolved path when ``external``; a trailing ``/`` when it names a directory. Empty for the
            working directory itself.
        external: Whether the path resolves outside the working directory.
    """

    match_path: str
    external: bool


def resolve_root(root: str | os.PathLike[str]) -> str:
    """Resolve the working directory once: absolute, symlinks followed."""
    return os.path.realpath(os.fspath(root))


def resolve_target(root: str, path: str, *, directory: bool = False) -> PathTarget:
    """Resolve ``path`` against the resolved working directory ``root``.

    ``..`` segments, absolute paths and symlinks (of the file itself or of any directory on the way) are all followed
    before judging, so every spelling of one file gets one answer and a symlink inside the project that points
    outside is judged as outside. A leading ``~`` counts as the home directory, since a tool may expand it.

    Args:
        root: The working directory, already passed through ``resolve_root``.
        path: The tool's path argument.
        directory: Judge the path as a directory even when it does not exist (directory tools).

    Returns:
        The target to match rules against.
    """
    try:
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        full = os.path.realpath(os.path.join(root, expanded))
    except (ValueError, OSError):
        # Not a path the system can resolve (an embedded NUL, say): certainly not one known to be inside.
        return PathTarget(match_path=path.replace("\\", "/"), external=True)
    is_directory = directory or os.path.isdir(full)
    if full == root:
        return PathTarget(match_path="", external=False)
    full_path = PurePath(full)
    if full_path.is_relative_to(root):
        relative = full_path.relative_to(root).as_posix()
        return PathTarget(match_path=relative + "/" if is_directory else relative, external=False)
    absolute = full_path.as_posix()
    return PathTarget(match_path=absolute.rstrip("/") + "/" if is_directory else absolute, external=True)
