"""Doctor's environment checks: ``git`` on PATH, whether the working directory is a repository, free disk space."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from ironhive.adapters.diagnostics.report import ENVIRONMENT, Check, human_size

LOW_DISK_BYTES = 1_000_000_000
"""Less free space than this (1 GB) is a warning: sessions, logs and downloaded models live on that disk."""


def environment_checks(project: Path, home: Path, environ: Mapping[str, str], *, verbose: bool) -> list[Check]:
    """``git`` on PATH, the project as a git repository (``verbose`` only), and the free space of the home's disk.

    Args:
        project: The project (working) directory.
        home: The user's home directory (where ``.ironhive`` keeps sessions and models).
        environ: The environment (its ``PATH`` is searched).
        verbose: Add the informational checks and exact figures.

    Returns:
        The checks.
    """
    checks = [git_check(environ.get("PATH"), verbose=verbose)]
    if verbose:
        is_repository = (project / ".git").exists()
        state = "is a git repository" if is_repository else "is not a git repository (run --auto-commit needs one)"
        checks.append(Check(category=ENVIRONMENT, name="Git repository", status="pass", message=f"{project} {state}"))
    try:
        free = shutil.disk_usage(_existing(home)).free
    except OSError as error:
        message = f"Cannot read the free space of {home}: {error}"
        checks.append(Check(category=ENVIRONMENT, name="Disk space", status="warning", message=message))
    else:
        checks.append(disk_space_check(free, home, verbose=verbose))
    return checks


def git_check(path: str | None, *, verbose: bool) -> Check:
    """A pass when ``git`` is on ``path``, else a warning (``run --auto-commit`` and agents' git commands need it)."""
    found = shutil.which("git", path=path)
    if found is None:
        return Check(
            category=ENVIRONMENT,
            name="git",
            status="warning",
            message="git is not on PATH",
            hint="Install git: run --auto-commit and the git commands the agent runs need it.",
        )
    return Check(category=ENVIRONMENT, name="git", status="pass", message=f"Found: {found}" if verbose else "Found")


def disk_space_check(free: int, where: Path, *, verbose: bool) -> Check:
    """A warning when fewer than :data:`LOW_DISK_BYTES` are free on ``where``'s disk.

    Args:
        free: Free bytes.
        where: The folder measured.
        verbose: Show the exact figure on a pass.

    Returns:
        The check.
    """
    if free < LOW_DISK_BYTES:
        return Check(
            category=ENVIRONMENT,
            name="Disk space",
            status="warning",
            message=f"Only {human_size(free)} free on the disk of {where}",
            hint="Free some space: sessions, logs and downloaded models are kept under ~/.ironhive.",
        )
    message = f"{human_size(free)} free on the disk of {where}" if verbose else "At least 1 GB free"
    return Check(category=ENVIRONMENT, name="Disk space", status="pass", message=message)


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a fresh home may have no ``.ironhive`` yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path
