"""Loads the layered configuration for a CLI run or server session, reporting its notices on stderr."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from ironhive.adapters.config.loader import LoadedConfig, load_config
from ironhive.adapters.config.private_files import secure_user_directory


def load_configuration(environ: Mapping[str, str], project: Path, *, ask: bool = False) -> LoadedConfig:
    """Load the layered configuration; its notices, and its warnings (``Warning: …``, naming file:line), go to stderr.

    Args:
        environ: The process environment.
        project: The project (working) directory.
        ask: Whether the user may be asked, on a terminal, to trust project files whose settings were ignored (never
            over the wire: the untrusted default holds there).

    Raises:
        ConfigurationError: A config file of the user or of a trusted project is malformed or unreadable: the run
            stops (its message names the file and line) instead of running on other settings.
    """
    secure_user_directory(Path.home())  # a ~/.ironhive left open to others by an earlier version becomes owner-only
    loaded = load_config(home=Path.home(), project=project, environ=environ)
    if ask and loaded.untrusted_files:
        from ironhive.cli.trust_command import ask_to_trust

        if ask_to_trust(loaded):
            loaded = load_config(home=Path.home(), project=project, environ=environ)
    for line in (*loaded.notices, *(f"Warning: {warning}" for warning in loaded.warnings)):
        sys.stderr.write(f"{line}\n")
    return loaded
