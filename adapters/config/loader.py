"""Loads the layered configuration: global file → project file → environment → project ``.env``.

Decisions (inventory §C.1, with the original's later fixes):

- Layers merge as a tree: only keys present in a later layer override, so a project file that omits
  ``lmsupply.enabled`` keeps the global value. ``permissions`` is the exception: a present section is a complete policy,
  so a later layer replaces it as a whole. Lists are replaced, never concatenated.
- A ``null`` value means "not set here" and never overrides an earlier layer.
- ``.env`` is the last, highest layer (as the readme lists it): its values beat real environment variables. It is
  parsed, never loaded into the process environment, and only the variables the environment layer reads count.
- Nothing here stops start-up: an unknown key (any depth, reported as a dotted path), a value of the wrong type or
  range, a malformed or unreadable file each produce a warning and are ignored, and the other layers still load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ironhive.adapters.config.environment import environment_layer, parse_dotenv
from ironhive.adapters.config.files import (
    dotenv_path,
    global_config_path,
    project_config_path,
    read_yaml_mapping,
)
from ironhive.adapters.config.legacy import migrate_legacy_settings
from ironhive.adapters.config.schema import (
    WHOLE_SECTIONS,
    ConfigSection,
    IronHiveConfig,
    accepted_keys,
    canonical_key,
    section_model,
)
from ironhive.domain.errors import ConfigurationError

ENVIRONMENT_SOURCE = "environment"

_Warn = Callable[[str], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedConfig:
    """The merged configuration and what happened while loading it.

    Attributes:
        config: The validated configuration.
        warnings: Problems found (unknown keys, bad values, unreadable files), each naming its source.
        notices: Things done on the user's behalf (the legacy migration).
        sources: The files that were read and contributed, in layer order.
    """

    config: IronHiveConfig
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    sources: tuple[Path, ...] = ()


def load_config(*, home: Path, project: Path, environ: Mapping[str, str]) -> LoadedConfig:
    """Load and merge every configuration layer.

    Args:
        home: The user's home directory (``<home>/.ironhive/config.yaml`` is the global file).
        project: The project (working) directory (its ``.ironhive/config.yaml`` and ``.env``).
        environ: The process environment.

    Returns:
        The merged configuration with its warnings, notices and sources.
    """
    warnings: list[str] = []
    notices: list[str] = []
    sources: list[Path] = []
    migration = migrate_legacy_settings(home, project)
    notices.extend(message for message in (migration.notice,) if message)
    warnings.extend(message for message in (migration.warning,) if message)

    merged: dict[str, Any] = {}
    global_file = global_config_path(home)
    project_file = project_config_path(project)
    files = [global_file] if _same_file(global_file, project_file) else [global_file, project_file]
    for path in files:
        layer = _yaml_layer(path, warnings.append)
        if layer is not None:
            sources.append(path)
            merged = overlay(merged, clean_layer(layer, str(path), warnings.append))
    merged = overlay(merged, clean_layer(environment_layer(environ), ENVIRONMENT_SOURCE, warnings.append))
    dotenv_file = dotenv_path(project)
    dotenv = _dotenv_values(dotenv_file, warnings.append)
    if dotenv is not None:
        sources.append(dotenv_file)
        merged = overlay(merged, clean_layer(environment_layer(dotenv), str(dotenv_file), warnings.append))
    config = IronHiveConfig.model_validate(merged)
    return LoadedConfig(config=config, warnings=tuple(warnings), notices=tuple(notices), sources=tuple(sources))


def clean_layer(layer: Mapping[Any, Any], source: str, warn: _Warn) -> dict[str, Any]:
    """Drop what the schema cannot use from one layer, warning about each drop.

    Unknown keys (matched exactly; the accepted spellings are the schema's camelCase keys) and values that fail
    validation are removed; ``null`` values are dropped silently (not set).

    Args:
        layer: The layer's tree.
        source: The layer's name for warnings (a file path or ``environment``).
        warn: Receives each warning.

    Returns:
        A tree that validates on its own.
    """
    tree = _known_only(layer, IronHiveConfig, "", source, warn)
    for _ in range(100):  # each round removes at least one key, so this ends; the bound is a safety net
        try:
            IronHiveConfig.model_validate(tree)
        except ValidationError as error:
            removed = False
            for item in error.errors():
                path = _existing_path(tree, item["loc"])
                if path:
                    _delete(tree, path)
                    removed = True
                    warn(f"Invalid value for config key '{'.'.join(path)}' in {source} ignored: {item['msg']}")
            if not removed:
                warn(f"Invalid configuration in {source} ignored: {error.error_count()} problem(s)")
                return {}
        else:
            return tree
    return {}


def overlay(base: Mapping[str, Any], layer: Mapping[str, Any], *, _depth: int = 0) -> dict[str, Any]:
    """Merge ``layer`` over ``base`` as a tree: keys present in ``layer`` win, keys it omits keep ``base``'s value.

    Mappings merge key by key (except the sections of :data:`WHOLE_SECTIONS`, replaced whole); any other value,
    lists included, replaces the earlier one.

    Args:
        base: The earlier layers' tree.
        layer: The later layer's tree.

    Returns:
        A new merged tree (the inputs are not changed).
    """
    merged = dict(base)
    for key, value in layer.items():
        earlier = merged.get(key)
        whole = _depth == 0 and key in WHOLE_SECTIONS
        if isinstance(earlier, Mapping) and isinstance(value, Mapping) and not whole:
            merged[key] = overlay(earlier, value, _depth=_depth + 1)
        else:
            merged[key] = value
    return merged


def _known_only(
    tree: Mapping[Any, Any], model: type[ConfigSection], prefix: str, source: str, warn: _Warn
) -> dict[str, Any]:
    accepted = accepted_keys(model)
    kept: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if not isinstance(key, str) or key not in accepted:
            warn(f"Unknown config key '{dotted}' in {source} ignored")
            continue
        if value is None:
            continue
        nested = section_model(accepted[key].annotation)
        if nested is not None and isinstance(value, Mapping):
            value = _known_only(value, nested, f"{dotted}.", source, warn)
        kept[canonical_key(model, key)] = value
    return kept


def _existing_path(tree: Mapping[str, Any], location: tuple[int | str, ...]) -> tuple[str, ...]:
    """The longest prefix of a validation error's location that names a key of ``tree`` (list indexes stop it)."""
    path: list[str] = []
    node: object = tree
    for part in location:
        if not isinstance(part, str) or not isinstance(node, Mapping) or part not in node:
            break
        path.append(part)
        node = node[part]
    return tuple(path)


def _delete(tree: dict[str, Any], path: tuple[str, ...]) -> None:
    node = tree
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]


def _yaml_layer(path: Path, warn: _Warn) -> dict[str, Any] | None:
    try:
        return read_yaml_mapping(path)
    except ConfigurationError as error:  # YamlSyntaxError included: its message names the file and the line
        warn(f"{error}; the file was ignored")
    return None


def _dotenv_values(path: Path, warn: _Warn) -> dict[str, str] | None:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        warn(f"Cannot read {path}: {error}; the file was ignored")
        return None
    parsed = parse_dotenv(text, str(path))
    for message in parsed.warnings:
        warn(message)
    return parsed.values


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return False
