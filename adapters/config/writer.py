"""``set`` / ``get`` / ``unset`` on the global config file, key normalisation, value typing and display (masked).

Only the global ``<home>/.ironhive/config.yaml`` is read or written here. A write changes only the key it is about:
the file goes through ruamel.yaml's round-trip mode (:mod:`~ironhive.adapters.config.yaml_edit`), so the user's
comments, key order, quotes and blank lines stay, and is replaced atomically and owner-only
(:func:`~ironhive.adapters.config.files.write_text_privately`). The file is read with the bounded reader first, so a
malformed or hostile file is refused (naming the file and line) before anything is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from ironhive.adapters.config.files import global_config_path, parse_yaml_mapping, write_text_privately
from ironhive.adapters.config.masking import mask_value
from ironhive.adapters.config.safe_files import decode_text, load_yaml, read_limited_bytes
from ironhive.adapters.config.schema import (
    WHOLE_SECTIONS,
    IronHiveConfig,
    field_at,
    section_keys,
    value_kind,
)
from ironhive.domain.errors import ConfigurationError

if TYPE_CHECKING:
    from ironhive.adapters.config.yaml_edit import YamlDocument

_INTEGER = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")


def normalize_key(dotted: str) -> str:
    """Normalise each segment of a dotted key to the file's spelling.

    A segment matching a schema key case- and underscore-insensitively takes the schema's spelling
    (``OpenAI.API_KEY`` → ``openai.apiKey``, ``gpustack`` → ``gpuStack``). Other segments: snake_case becomes
    camelCase (``my_key`` → ``myKey``), otherwise the first character is lowercased (``MyKey`` → ``myKey``).

    Args:
        dotted: The key as typed.

    Returns:
        The normalised key.

    Raises:
        ConfigurationError: The key is empty or has an empty segment.
    """
    segments = dotted.strip().split(".")
    if not all(segment.strip() for segment in segments):
        raise ConfigurationError(f"Invalid key '{dotted}': use dotted names such as openai.apiKey")
    normalised: list[str] = []
    for segment in segments:
        known = section_keys(normalised)
        wanted = _fold(segment)
        match = next((key for key in (known or {}) if _fold(key) == wanted), None)
        normalised.append(match if match is not None else _camel(segment.strip()))
    return ".".join(normalised)


def is_known_key(dotted: str) -> bool:
    """Whether a normalised dotted key is in the schema; any key under ``permissions`` counts (checked elsewhere)."""
    segments = dotted.split(".")
    return segments[0] in WHOLE_SECTIONS or field_at(segments) is not None


def parse_value(dotted: str, raw: str) -> Any:
    """Type a value typed on the command line for a normalised key.

    A key the schema knows as text keeps the text as it is (a model called ``4``, a numeric API key). A list key takes
    a YAML flow list (``[a, b]``) or comma-separated items. Otherwise: ``true``/``false`` (any case) → boolean, integer
    text → integer, decimal text → float (an ironhive addition), anything else → text.

    Args:
        dotted: The normalised key.
        raw: The value as typed.

    Returns:
        The typed value.
    """
    info = field_at(dotted.split("."))
    kind = value_kind(info) if info is not None else "other"
    if kind == "text":
        return raw
    if kind == "list":
        return _parse_list(raw)
    return scalar_from_text(raw)


def value_problem(dotted: str, value: Any) -> str | None:
    """Why loading would ignore ``value`` at a normalised key (wrong type or range), or ``None`` when it is fine.

    Keys outside the schema and under ``permissions`` are not judged here.
    """
    segments = dotted.split(".")
    if segments[0] in WHOLE_SECTIONS or field_at(segments) is None:
        return None
    tree: Any = value
    for segment in reversed(segments):
        tree = {segment: tree}
    try:
        IronHiveConfig.model_validate(tree)
    except ValidationError as error:
        return str(error.errors()[0]["msg"])
    return None


def scalar_from_text(raw: str) -> bool | int | float | str:
    """``true``/``false`` → bool, integer text → int, decimal text → float, anything else → the text."""
    text = raw.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _INTEGER.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return raw


def read_global(home: Path) -> dict[str, Any]:
    """The global file's mapping (``{}`` when it does not exist).

    Raises:
        ConfigurationError: The file cannot be read or does not parse.
    """
    return parse_yaml_mapping(_global_text(home), global_config_path(home))


def _global_text(home: Path) -> str:
    path = global_config_path(home)
    data = read_limited_bytes(path)
    return "" if data is None else decode_text(path, data)


def _edit_global(home: Path) -> YamlDocument:
    """The global file loaded for editing, after the bounded parser accepted it (or an empty one).

    Raises:
        ConfigurationError: The file cannot be read or does not parse.
    """
    from ruamel.yaml.error import YAMLError  # ruamel is needed by set and unset only

    from ironhive.adapters.config.yaml_edit import YamlDocument

    path = global_config_path(home)
    text = _global_text(home)
    parse_yaml_mapping(text, path)  # bounds, duplicate keys and syntax, with the file's line in the message
    try:
        return YamlDocument(text)
    except (YAMLError, TypeError) as error:
        raise ConfigurationError(f"Cannot edit {path}: {error}") from error


def set_value(home: Path, dotted: str, raw: str) -> tuple[str, Any]:
    """Set a dotted key in the global file (creating the file and its directory).

    Args:
        home: The user's home directory.
        dotted: The key as typed (normalised here).
        raw: The value as typed (typed by :func:`parse_value`).

    Returns:
        The normalised key and the typed value written.

    Raises:
        ConfigurationError: The key is invalid, a parent key holds a value rather than a section, or the file cannot
            be read or written.
    """
    key = normalize_key(dotted)
    value = parse_value(key, raw)
    document = _edit_global(home)
    try:
        document.set_key(key.split("."), value)
    except ValueError as error:
        raise ConfigurationError(f"Cannot set '{key}': '{error}' holds a value, not a section") from error
    write_text_privately(global_config_path(home), document.text())
    return key, value


def get_value(home: Path, dotted: str) -> tuple[str, Any]:
    """Read a dotted key from the global file (exact match on the normalised key).

    Args:
        home: The user's home directory.
        dotted: The key as typed.

    Returns:
        The normalised key and its value (a mapping for a section).

    Raises:
        KeyError: The key is not in the file.
        ConfigurationError: The key is invalid or the file cannot be read.
    """
    key = normalize_key(dotted)
    node: Any = read_global(home)
    for segment in key.split("."):
        if not isinstance(node, Mapping) or segment not in node:
            raise KeyError(key)
        node = node[segment]
    return key, node


def unset_value(home: Path, dotted: str) -> tuple[str, bool]:
    """Remove a dotted key from the global file; sections left empty by the removal go too.

    Args:
        home: The user's home directory.
        dotted: The key as typed.

    Returns:
        The normalised key and whether it was there.

    Raises:
        ConfigurationError: The key is invalid or the file cannot be read or written.
    """
    key = normalize_key(dotted)
    document = _edit_global(home)
    if not document.delete_key(key.split(".")):
        return key, False
    write_text_privately(global_config_path(home), document.text())
    return key, True


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys → leaf values; lists and empty mappings are leaves.

    Args:
        tree: A nested mapping.
        prefix: Prepended to every key (``"openai"`` gives ``openai.apiKey``).

    Returns:
        The flattened mapping, in the tree's order.
    """
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, dotted))
        else:
            flat[dotted] = value
    return flat


def format_value(value: Any) -> str:
    """A value as shown to the user: ``true``/``false``/``null``, text as is, lists and mappings as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | Mapping):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def display_value(dotted: str, value: Any, *, raw: bool = False) -> str:
    """A value for display (unless ``raw``): masked under a secret key, and secrets nested in it or in URLs masked.

    See :mod:`ironhive.adapters.config.masking`.
    """
    return format_value(value if raw else mask_value(dotted, value))


def _parse_list(raw: str) -> list[Any]:
    text = raw.strip()
    if text.startswith("["):
        try:
            parsed = load_yaml(text)
        except yaml.YAMLError as error:
            raise ConfigurationError(f"Cannot read the list {raw!r}: {error}") from error
        if isinstance(parsed, list):
            return parsed
    return [item.strip() for item in text.split(",") if item.strip()]


def _fold(segment: str) -> str:
    return segment.strip().replace("_", "").replace("-", "").lower()


def _camel(segment: str) -> str:
    if "_" in segment:
        parts = [part for part in segment.split("_") if part]
        if parts:
            return parts[0][:1].lower() + parts[0][1:] + "".join(part[:1].upper() + part[1:] for part in parts[1:])
    return segment[:1].lower() + segment[1:]
