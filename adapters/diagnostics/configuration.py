"""Doctor's configuration checks (config files, warnings, permission policy, file modes) and the fixes for them."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ironhive.adapters.config.environment import parse_dotenv
from ironhive.adapters.config.files import (
    DOTENV_FILE,
    FILE_MODE,
    dotenv_path,
    global_config_path,
    legacy_settings_path,
    project_config_path,
    read_yaml_mapping,
)
from ironhive.adapters.config.legacy import migrate_legacy_settings
from ironhive.adapters.config.loader import load_config
from ironhive.adapters.config.private_files import exposed_paths, make_private_directory, restrict_tree
from ironhive.adapters.config.schema import IronHiveConfig, is_secret_key
from ironhive.adapters.config.writer import flatten
from ironhive.adapters.diagnostics.report import CONFIGURATION, Check, CheckStatus
from ironhive.adapters.permissions.loader import PERMISSION_FILE_NAMES, load_permission_policy
from ironhive.domain.errors import ConfigurationError

STARTER_CONFIG = """\
# ironhive configuration. Set values with `ironhive set <key> <value>`, for example:
#   ironhive set openai.apiKey sk-...
#   ironhive set openai.model gpt-4o-mini
# `ironhive config` shows the effective configuration (this file, the project's .ironhive/config.yaml, the
# environment and .env). With no provider configured, ironhive runs a local model (lmsupply.enabled: true).
"""
"""What ``doctor --fix`` writes when the global config file is missing: comments only, so it changes no setting."""

_GROUP_OR_OTHER = stat.S_IRWXG | stat.S_IRWXO
_LISTED_AT_MOST = 5


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigurationFindings:
    """The configuration checks and the configuration they loaded (for the provider checks).

    Attributes:
        checks: The checks of the Configuration category.
        config: The merged configuration.
    """

    checks: tuple[Check, ...]
    config: IronHiveConfig


def apply_configuration_fixes(home: Path, project: Path) -> list[str]:
    """Fix what can be fixed without asking: the config directory and file, the legacy migration, file modes.

    Args:
        home: The user's home directory.
        project: The project (working) directory.

    Returns:
        One sentence per change made, in order (empty when nothing needed fixing).

    Raises:
        ConfigurationError: A change was needed and could not be made.
    """
    fixes: list[str] = []
    directory = global_config_path(home).parent
    if not directory.exists():
        try:
            make_private_directory(directory)
        except OSError as error:
            raise ConfigurationError(f"Cannot create {directory}: {error}") from error
        fixes.append(f"Created {directory} (mode 0700)")
    migration = migrate_legacy_settings(home, project)
    if migration.notice:
        fixes.append(migration.notice)
    global_file = global_config_path(home)
    if not global_file.exists():
        _create_starter_config(global_file)
        fixes.append(f"Created {global_file} (mode 0600)")
    for path in exposed_secret_files(home, project):
        try:
            path.chmod(FILE_MODE)
        except OSError as error:
            raise ConfigurationError(f"Cannot change the permissions of {path}: {error}") from error
        fixes.append(f"Restricted {path} to its owner (mode 0600)")
    try:
        restricted = restrict_tree(home)
    except OSError as error:
        raise ConfigurationError(f"Cannot restrict the files under {directory} to their owner: {error}") from error
    fixes.extend(f"Restricted {path} to its owner (mode {_mode_of(path):04o})" for path in restricted)
    return fixes


def configuration_checks(home: Path, project: Path, environ: Mapping[str, str]) -> ConfigurationFindings:
    """Check the global config file, the loader's errors and warnings, the permission policy, the secret files' modes.

    Loading the configuration runs the legacy migration when it is due, as every ironhive command does. A config file
    that stops every run (malformed YAML in the user's or a trusted project's file) is an error; the other checks run
    on the configuration of the files that could be read.

    Args:
        home: The user's home directory.
        project: The project (working) directory.
        environ: The process environment.

    Returns:
        The checks and the merged configuration.
    """
    checks: list[Check] = []
    private_check = _private_files_check(home)
    global_file = global_config_path(home)
    existed = global_file.is_file()
    loaded = load_config(home=home, project=project, environ=environ, strict=False)
    if existed:
        checks.append(_check("Global config file", "pass", str(global_file)))
    elif global_file.is_file():  # the migration just wrote it
        checks.append(_check("Global config file", "pass", f"{global_file} (created by the migration)"))
    else:
        hint = "Run `ironhive doctor --fix` to create it, or set a value with `ironhive set <key> <value>`."
        checks.append(_check("Global config file", "warning", f"Not found: {global_file}", hint))
    checks.extend(
        _check("Legacy settings", "pass", notice) for notice in loaded.notices if notice != loaded.trust_notice
    )
    if loaded.trust_notice is not None:
        trust_hint = "Review the project's files, then run `ironhive trust` (until then they cannot widen anything)."
        checks.append(_check("Project trust", "warning", loaded.trust_notice, trust_hint))
    error_hint = "Fix the file; until then every run stops with this error."
    checks.extend(_check("Config file", "error", error, error_hint) for error in loaded.errors)
    hint = "Correct or remove it; `ironhive config` shows the effective configuration."
    checks.extend(_check("Config warning", "warning", warning, hint) for warning in loaded.warnings)
    if not loaded.warnings and not loaded.errors:
        read = ", ".join(str(path) for path in loaded.sources)
        message = f"No problems in {read}" if read else "No config files; defaults and the environment apply"
        checks.append(_check("Config files", "pass", message))
    checks.append(_permission_check(project, loaded.config))
    checks.append(_file_mode_check(home, project))
    checks.append(private_check)
    return ConfigurationFindings(checks=tuple(checks), config=loaded.config)


def exposed_secret_files(home: Path, project: Path) -> list[Path]:
    """The config files that hold a secret (an API key, token or password) and that the group or others may access.

    Checked: the global and project ``config.yaml``, the project's ``.env`` and the legacy ``settings.json``. Always
    empty on Windows, where POSIX modes do not apply.
    """
    if os.name == "nt":
        return []
    candidates = [
        global_config_path(home),
        project_config_path(project),
        dotenv_path(project),
        legacy_settings_path(home),
    ]
    exposed: list[Path] = []
    for path in dict.fromkeys(candidates):
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and mode & _GROUP_OR_OTHER and holds_secret(path):
            exposed.append(path)
    return exposed


def holds_secret(path: Path) -> bool:
    """Whether a config file sets a secret key (``.env``: a variable named like one) to a non-empty value."""
    try:
        if path.name == DOTENV_FILE:
            values = parse_dotenv(path.read_text(encoding="utf-8-sig"), str(path)).values
            return any(is_secret_key(name) and value.strip() for name, value in values.items())
        if path.suffix == ".json":
            document: Any = json.loads(path.read_text(encoding="utf-8-sig"))
        else:
            document = read_yaml_mapping(path)
    except (OSError, UnicodeDecodeError, ValueError, ConfigurationError):
        return False  # a file that does not parse has its own warning; its secrets are unusable until fixed
    if not isinstance(document, Mapping):
        return False
    return any(is_secret_key(key) and value not in (None, "") for key, value in flatten(document).items())


def _permission_check(project: Path, config: IronHiveConfig) -> Check:
    try:
        load_permission_policy(project, config.permissions)
    except ConfigurationError as error:
        hint = "Fix the permission policy; until then every run stops with this error."
        return _check("Permission policy", "error", str(error), hint)
    for name in PERMISSION_FILE_NAMES:
        path = project / ".ironhive" / name
        if path.exists():
            return _check("Permission policy", "pass", f"Valid: {path}")
    if config.permissions is not None:
        return _check("Permission policy", "pass", "Valid: the permissions section of config.yaml")
    return _check("Permission policy", "pass", "No permission file; the default policy applies")


def _file_mode_check(home: Path, project: Path) -> Check:
    exposed = exposed_secret_files(home, project)
    if not exposed:
        return _check("File permissions", "pass", "Config files holding secrets are readable by their owner only")
    details = ", ".join(f"{path} ({stat.S_IMODE(path.stat().st_mode):04o})" for path in exposed)
    hint = "Run `ironhive doctor --fix` (or chmod 600 the files)."
    return _check("File permissions", "warning", f"Holding secrets but readable by others: {details}", hint)


def _private_files_check(home: Path) -> Check:
    """Whether anything under ``~/.ironhive`` (sessions, logs, trust, caches, models) is open to the group or others."""
    exposed = exposed_paths(home)
    if not exposed:
        return _check("Private files", "pass", "Everything under ~/.ironhive is accessible to its owner only")
    shown = ", ".join(f"{path} ({_mode_of(path):04o})" for path in exposed[:_LISTED_AT_MOST])
    more = f" and {len(exposed) - _LISTED_AT_MOST} more" if len(exposed) > _LISTED_AT_MOST else ""
    hint = "Run `ironhive doctor --fix` (or chmod -R go-rwx ~/.ironhive): sessions and logs may hold secrets."
    return _check("Private files", "warning", f"Accessible to the group or others: {shown}{more}", hint)


def _mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _create_starter_config(path: Path) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    except OSError as error:
        raise ConfigurationError(f"Cannot create {path}: {error}") from error
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(STARTER_CONFIG)
        path.chmod(FILE_MODE)  # os.open's mode is filtered by the umask
    except OSError as error:
        with contextlib.suppress(OSError):
            path.unlink()
        raise ConfigurationError(f"Cannot write {path}: {error}") from error


def _check(name: str, status: CheckStatus, message: str, hint: str | None = None) -> Check:
    return Check(category=CONFIGURATION, name=name, status=status, message=message, hint=hint)
