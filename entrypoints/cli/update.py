"""The ``update`` command: compares the installed version with the newest release and upgrades with the same installer.

Only cyclopts is imported at module level; the release check and the installer detection load when the command runs.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.adapters.diagnostics.releases import PackageIndex

UPDATE_HELP = """Update ironhive to the newest release on the package index.

--check only tells: exit 2 when an update is available, 0 when up to date, 1 when the check failed. Otherwise the
upgrade asks for confirmation (on a terminal; elsewhere pass --force) and runs the installer that installed ironhive:
`pipx upgrade`, `uv tool upgrade`, `uv pip install` or `python -m pip install`. --dry-run prints that command instead.

The index is --index-url, else PIP_INDEX_URL when it is a PyPI-like ".../simple" URL, else https://pypi.org; the
newest release is read from its JSON API (INDEX/pypi/ironhive/json) within 5 seconds."""


def register(app: App) -> None:
    """Add the ``update`` command to ``app``."""
    app.command(update, name="update", help=UPDATE_HELP)


def update(
    *,
    check: Annotated[
        bool, Parameter(help="Only check: exit 2 when an update is available, 0 when up to date.")
    ] = False,
    force: Annotated[bool, Parameter(help="Upgrade without asking for confirmation.")] = False,
    dry_run: Annotated[bool, Parameter(help="Print the upgrade command instead of running it.")] = False,
    index_url: Annotated[
        str | None,
        Parameter(help="A PyPI-compatible index (base or .../simple URL); the upgrade installs from it too."),
    ] = None,
) -> int:
    """Update ironhive to the newest release."""
    from ironhive import __version__
    from ironhive.adapters.diagnostics.releases import ReleaseCheckError, latest_version, resolve_index
    from ironhive.adapters.diagnostics.versions import is_newer

    try:
        index = resolve_index(index_url, os.environ)
        latest = latest_version(index)
        newer = is_newer(latest, __version__)
    except (ReleaseCheckError, ValueError) as error:
        sys.stderr.write(f"Error: Cannot check for updates: {error}\n")
        return 1
    if not newer:
        sys.stdout.write(f"ironhive {__version__} is up to date (newest release on {index.shown}: {latest}).\n")
        return 0
    sys.stdout.write(f"Update available: ironhive {__version__} → {latest}\n")
    if check:
        sys.stdout.write("Run `ironhive update` to install it.\n")
        return 2
    return _upgrade(latest, index, force=force, dry_run=dry_run)


def _upgrade(latest: str, index: PackageIndex, *, force: bool, dry_run: bool) -> int:
    import shlex
    import subprocess

    from ironhive.adapters.diagnostics.installer import detect_installation, upgrade_command
    from ironhive.adapters.diagnostics.probe import redact_credentials
    from ironhive.domain.errors import ConfigurationError

    installation = detect_installation()
    try:
        command = upgrade_command(installation, latest, index)
    except ConfigurationError as error:
        sys.stderr.write(f"Error: {error}\n")
        return 1
    shown = redact_credentials(shlex.join(command))
    if installation.editable_source is not None:
        source = installation.editable_source or "a source tree"
        sys.stderr.write(
            f"Note: this ironhive is an editable install from {source}; upgrading replaces it with the release "
            "(update the source tree instead to keep developing).\n"
        )
    if dry_run:
        sys.stdout.write(f"Would run: {shown}\n")
        return 0
    if not force:
        if not sys.stdin.isatty():
            sys.stderr.write(
                "Error: Not updating without confirmation: there is no terminal to ask on. Pass --force to update "
                "(or --dry-run to see the command).\n"
            )
            return 1
        sys.stdout.write(f"Run `{shown}`? [y/N] ")
        sys.stdout.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            sys.stdout.write("Update cancelled.\n")
            return 1
    sys.stdout.write(f"Running: {shown}\n")
    sys.stdout.flush()
    try:
        completed = subprocess.run(command, check=False)
    except OSError as error:
        sys.stderr.write(f"Error: Cannot run {command[0]}: {error}\n")
        return 1
    if completed.returncode != 0:
        sys.stderr.write(f"Error: The upgrade failed ({installation.installer} exited with {completed.returncode}).\n")
        return 1
    sys.stdout.write(f"Updated ironhive to {latest}.\n")
    return 0
