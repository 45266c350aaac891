"""Where the configuration files live, and reading (bounded, never blocking) and atomically writing them (0600)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ironhive.adapters.atomic_files import write_atomically
from ironhive.adapters.config.private_files import make_private_directory
from ironhive.adapters.config.safe_files import decode_text, load_yaml, read_limited_bytes
from ironhive.domain.errors import ConfigurationError

CONFIG_DIRECTORY = ".ironhive"
CONFIG_FILE = "config.yaml"
LEGACY_FILE = "settings.json"
DOTENV_FILE = ".env"

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def global_config_path(home: Path) -> Path:
    """``<home>/.ironhive/config.yaml``: the file ``set``/``get``/``unset`` work on."""
    return home / CONFIG_DIRECTORY / CONFIG_FILE


def project_config_path(project: Path) -> Path:
    """``<project>/.ironhive/config.yaml``."""
    return project / CONFIG_DIRECTORY / CONFIG_FILE


def legacy_settings_path(home: Path) -> Path:
    """``<home>/.ironhive/settings.json``: the settings file of earlier versions."""
    return home / CONFIG_DIRECTORY / LEGACY_FILE


def dotenv_path(project: Path) -> Path:
    """``<project>/.env``."""
    return project / DOTENV_FILE


class YamlSyntaxError(ConfigurationError):
    """A YAML file does not parse.

    Attributes:
        path: The file.
        line: The 1-based line of the problem, when known.
        problem: What is wrong.
    """

    def __init__(self, path: Path, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"Malformed YAML in {where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


def read_yaml_mapping(path: Path) -> dict[str, Any] | None:
    """Read a YAML file whose top level is a mapping (through the bounded, non-blocking reader).

    Args:
        path: The file.

    Returns:
        The mapping (an empty file gives ``{}``), or ``None`` when the file does not exist.

    Raises:
        YamlSyntaxError: The file does not parse, or breaks a bound (nesting, aliases, a duplicate key).
        ConfigurationError: The file is refused (not a regular file, too large), cannot be read, or its top level is
            not a mapping.
    """
    read = read_yaml_file(path)
    return None if read is None else read[0]


def read_yaml_file(path: Path) -> tuple[dict[str, Any], bytes] | None:
    """Like :func:`read_yaml_mapping`, also giving the bytes that were parsed (what a trust decision hashes).

    Raises:
        YamlSyntaxError: As :func:`read_yaml_mapping`.
        ConfigurationError: As :func:`read_yaml_mapping`.
    """
    data = read_limited_bytes(path)
    if data is None:
        return None
    return parse_yaml_mapping(decode_text(path, data), path), data


def parse_yaml_mapping(text: str, path: Path) -> dict[str, Any]:
    """Parse YAML text whose top level is a mapping; errors name ``path``.

    Raises:
        YamlSyntaxError: The text does not parse or breaks a bound.
        ConfigurationError: Its top level is not a mapping.
    """
    try:
        document = load_yaml(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        raise YamlSyntaxError(path, line, str(problem)) from error
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigurationError(
            f"{path} must hold a mapping of sections at the top level, not {type(document).__name__}"
        )
    return document


def write_yaml_atomically(path: Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` as YAML to ``path`` atomically (a new file: use :func:`write_text_privately` to edit one).

    Raises:
        ConfigurationError: The file cannot be written.
    """
    text = yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, default_flow_style=False)
    write_text_privately(path, text)


def write_text_privately(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` atomically, owner-only (0600; its folder 0700, missing parents too).

    Raises:
        ConfigurationError: The file cannot be written.
    """
    try:
        make_private_directory(path.parent)
        write_atomically(path, text, private=True)
    except OSError as error:
        raise ConfigurationError(f"Cannot write {path}: {error}") from error
