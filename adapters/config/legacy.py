"""One-time migration of the legacy ``~/.ironhive/settings.json`` to ``~/.ironhive/config.yaml``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from ironhive.adapters.config.files import (
    global_config_path,
    legacy_settings_path,
    project_config_path,
    write_yaml_atomically,
)
from ironhive.adapters.config.private_files import restrict_file
from ironhive.adapters.config.safe_files import load_json, read_limited_text
from ironhive.domain.errors import ConfigurationError


@dataclass(frozen=True, kw_only=True, slots=True)
class MigrationOutcome:
    """What :func:`migrate_legacy_settings` did.

    Attributes:
        migrated: Whether a config.yaml was written.
        notice: A note for the user when the migration ran.
        warning: Why a present legacy file was not migrated.
    """

    migrated: bool = False
    notice: str | None = None
    warning: str | None = None


def migrate_legacy_settings(home: Path, project: Path) -> MigrationOutcome:
    """Write ``settings.json`` out as the global config.yaml when neither config.yaml exists.

    The legacy file holds the same shape in camelCase JSON; it is copied as it is (the loader reports unknown keys)
    and left in place, restricted to its owner (0600) like the file it became. Once config.yaml exists the migration
    never runs again.

    Args:
        home: The user's home directory.
        project: The project (working) directory.

    Returns:
        The outcome; nothing happens without a legacy file or when a config.yaml exists.
    """
    legacy = legacy_settings_path(home)
    target = global_config_path(home)
    if legacy.is_file():
        # The legacy file keeps its key after the migration (it is left in place), so it becomes owner-only too.
        with contextlib.suppress(OSError):
            restrict_file(legacy)
    if target.exists() or project_config_path(project).exists() or not legacy.is_file():
        return MigrationOutcome()
    try:
        document = load_json(read_limited_text(legacy) or "")
    except (ConfigurationError, ValueError) as error:
        return MigrationOutcome(warning=f"Legacy settings {legacy} not migrated: {error}")
    if not isinstance(document, dict):
        return MigrationOutcome(warning=f"Legacy settings {legacy} not migrated: the top level is not an object")
    try:
        write_yaml_atomically(target, document)
    except ConfigurationError as error:
        return MigrationOutcome(warning=f"Legacy settings {legacy} not migrated: {error}")
    return MigrationOutcome(migrated=True, notice=f"Migrated legacy settings {legacy} to {target}")
