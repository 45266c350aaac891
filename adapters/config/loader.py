"""Loads the layered configuration: global file → project file → environment → project ``.env``.

Decisions (inventory §C.1, with the original's later fixes):

- Layers merge as a tree: only keys present in a later layer override, so a project file that omits
  ``lmsupply.enabled`` keeps the global value. ``permissions`` is the exception: a present section is a complete policy,
  so a later layer replaces it as a whole. Lists are replaced, never concatenated.
- A ``null`` value means "not set here" and never overrides an earlier layer.
- ``.env`` is the last, highest layer (as the readme lists it): its values beat real environment variables. It is
  parsed (python-dotenv's grammar, ``${VAR}`` expanded; see :mod:`ironhive.adapters.config.layers`), never loaded
  into the process environment, and only the variables the environment layer reads count.
- An unknown key (any depth, reported as a dotted path) or a value of the wrong type or range is a warning naming the
  file and line, and is ignored; the other keys and layers still load.
- A config file that cannot be used as a whole (malformed YAML, not a mapping, unreadable, or refused as hostile: a
  FIFO, a device, over 1 MiB, YAML nested too deep, an alias bomb, a duplicate key; see
  :mod:`ironhive.adapters.config.safe_files`) is an error when it is the user's own or a trusted project's: the run
  must stop rather than silently fall back to another provider. An untrusted project's file cannot stop a run (a
  repository must not be able to), so there it stays a warning and the file is ignored.
- The project's files are a repository's, untrusted until the user trusts their exact content
  (:mod:`ironhive.adapters.config.trust`). Until then only the keys of :data:`UNTRUSTED_SECTIONS` and
  :data:`UNTRUSTED_KEYS` of the project's ``config.yaml`` and the matching variables of its ``.env`` apply: nothing
  that sets an endpoint, a key, a provider, the advisor, web tools, skills or local models, so the user's credentials
  never go to an endpoint a project file names. Its ``permissions`` section only narrows (the permission loader reads
  it). One notice says what was ignored and how to trust.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ironhive.adapters.config.environment import ENVIRONMENT_VARIABLES, environment_layer
from ironhive.adapters.config.files import dotenv_path, global_config_path, project_config_path
from ironhive.adapters.config.layers import KeyLines, read_dotenv_layer, read_yaml_layer
from ironhive.adapters.config.legacy import migrate_legacy_settings
from ironhive.adapters.config.safe_files import read_limited_bytes
from ironhive.adapters.config.schema import (
    WHOLE_SECTIONS,
    ConfigSection,
    IronHiveConfig,
    accepted_keys,
    canonical_key,
    section_model,
)
from ironhive.adapters.config.trust import TRUST_PROJECT_VARIABLE, ProjectTrust, sha256_of
from ironhive.adapters.provider_registry import untrusted_keys
from ironhive.domain.errors import ConfigurationError

ENVIRONMENT_SOURCE = "environment"

UNTRUSTED_SECTIONS = frozenset({"compaction", "chatBehavior", "approval"})
"""Sections an untrusted project file may set: they tune the loop, and cannot widen rights or redirect anything."""

UNTRUSTED_KEYS: dict[str, frozenset[str]] = untrusted_keys()
"""Keys of other sections an untrusted project file may set: model names for the user's own providers."""

TRUST_HINT = (
    f"Review them, then run `ironhive trust` to trust this project (or set {TRUST_PROJECT_VARIABLE}=1 for one run)."
)

_Warn = Callable[[str], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedConfig:
    """The merged configuration and what happened while loading it.

    Attributes:
        config: The validated configuration.
        warnings: Problems found (unknown keys, bad values, an untrusted project's unusable file), each naming its
            source (and line).
        errors: The config files that could not be used at all (malformed, unreadable), each naming the file and the
            line; only a non-strict load returns with any (a strict one raises).
        notices: Things done on the user's behalf (the legacy migration).
        sources: The files that were read and contributed, in layer order.
        ignored: What was ignored because the project is not trusted, one item per file (empty when nothing was).
        untrusted_files: The untrusted project files whose content was (partly) ignored, each with the SHA-256 of the
            content read: what trusting the project now would trust.
        trust_notice: The one line (also among ``notices``) saying what was ignored and how to trust, when anything
            was.
    """

    config: IronHiveConfig
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    sources: tuple[Path, ...] = ()
    ignored: tuple[str, ...] = ()
    untrusted_files: tuple[tuple[Path, str], ...] = ()
    trust_notice: str | None = None


def load_config(
    *,
    home: Path,
    project: Path,
    environ: Mapping[str, str],
    trust: ProjectTrust | None = None,
    strict: bool = True,
) -> LoadedConfig:
    """Load and merge every configuration layer.

    Args:
        home: The user's home directory (``<home>/.ironhive/config.yaml`` is the global file).
        project: The project (working) directory (its ``.ironhive/config.yaml`` and ``.env``).
        environ: The process environment.
        trust: Which project files may take effect (the user's trust store and ``environ`` when omitted).
        strict: Raise when a config file cannot be used (else it is left out and listed in ``errors``: the doctor).

    Returns:
        The merged configuration with its warnings, notices, sources and what an untrusted project had ignored.

    Raises:
        ConfigurationError: ``strict`` and the user's or a trusted project's config file is malformed or unreadable
            (the message names the file and line).
    """
    trust = trust if trust is not None else ProjectTrust.for_user(home=home, environ=environ)
    warnings: list[str] = []
    errors: list[ConfigurationError] = []
    notices: list[str] = []
    sources: list[Path] = []
    ignored: list[str] = []
    untrusted: list[tuple[Path, str]] = []
    migration = migrate_legacy_settings(home, project)
    notices.extend(message for message in (migration.notice,) if message)
    warnings.extend(message for message in (migration.warning,) if message)

    merged: dict[str, Any] = {}
    global_file = global_config_path(home)
    project_file = project_config_path(project)
    files = [global_file] if _same_file(global_file, project_file) else [global_file, project_file]
    for path in files:
        read = read_yaml_layer(path, trust if path is project_file else None, warnings.append, errors.append)
        if read is None:
            continue
        sources.append(path)
        layer = clean_layer(read[0], str(path), warnings.append, lines=read[2])
        if path is project_file and not trust.is_trusted(path, read[1]):
            layer, dropped = untrusted_layer(layer)
            if dropped:
                ignored.append(f"{', '.join(dropped)} in {path}")
                untrusted.append((path, read[1]))
        merged = overlay(merged, layer)
    merged = overlay(merged, clean_layer(environment_layer(environ), ENVIRONMENT_SOURCE, warnings.append))
    dotenv_file = dotenv_path(project)
    dotenv = read_dotenv_layer(dotenv_file, trust, environ, warnings.append)
    if dotenv is not None:
        values, digest, trusted = dotenv
        sources.append(dotenv_file)
        if not trusted:
            values, dropped = untrusted_variables(values)
            if dropped:
                ignored.append(f"{', '.join(dropped)} in {dotenv_file}")
                untrusted.append((dotenv_file, digest))
        merged = overlay(merged, clean_layer(environment_layer(values), str(dotenv_file), warnings.append))
    for note, file_and_digest in _other_untrusted_files(project, trust):
        ignored.append(note)
        untrusted.append(file_and_digest)
    trust_notice = untrusted_notice(ignored) if ignored else None
    if trust_notice is not None:
        notices.append(trust_notice)
    if strict and errors:
        raise errors[0] if len(errors) == 1 else ConfigurationError("; ".join(str(error) for error in errors))
    config = IronHiveConfig.model_validate(merged)
    return LoadedConfig(
        config=config,
        warnings=tuple(warnings),
        errors=tuple(str(error) for error in errors),
        notices=tuple(notices),
        sources=tuple(sources),
        ignored=tuple(ignored),
        untrusted_files=tuple(untrusted),
        trust_notice=trust_notice,
    )


def untrusted_notice(ignored: Sequence[str]) -> str:
    """The one line that says what an untrusted project had ignored and how to trust it."""
    return f"This project is not trusted, so ironhive ignored: {'; '.join(ignored)}. {TRUST_HINT}"


def untrusted_layer(layer: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Split a cleaned project layer into what an untrusted file may set and the dotted keys it may not.

    Returns:
        The kept tree and the ignored keys (a section's keys one level deep; ``permissions`` as one item).
    """
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for section, value in layer.items():
        if section in UNTRUSTED_SECTIONS:
            kept[section] = value
            continue
        if section == "permissions":
            dropped.append("permissions (its deny and ask rules still apply)")
            continue
        allowed = UNTRUSTED_KEYS.get(section, frozenset())
        if not isinstance(value, Mapping):
            dropped.append(section)
            continue
        part = {key: item for key, item in value.items() if key in allowed}
        dropped.extend(f"{section}.{key}" for key in value if key not in allowed)
        if part:
            kept[section] = part
    return kept, dropped


_UNTRUSTED_VARIABLES = frozenset(
    variable for variable, (section, key) in ENVIRONMENT_VARIABLES.items() if key in UNTRUSTED_KEYS.get(section, ())
)


def untrusted_variables(values: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split an untrusted ``.env``'s values into the ones it may set (model names) and the variables it may not."""
    kept = {
        name: value
        for name, value in values.items()
        if name not in ENVIRONMENT_VARIABLES or name in _UNTRUSTED_VARIABLES
    }
    dropped = [name for name in ENVIRONMENT_VARIABLES if name in values and name not in kept and values[name].strip()]
    return kept, dropped


def clean_layer(
    layer: Mapping[Any, Any], source: str, warn: _Warn, *, lines: Callable[[], KeyLines] | None = None
) -> dict[str, Any]:
    """Drop what the schema cannot use from one layer, warning about each drop.

    Unknown keys (matched exactly; the accepted spellings are the schema's camelCase keys) and values that fail
    validation are removed; ``null`` values are dropped silently (not set).

    Args:
        layer: The layer's tree.
        source: The layer's name for warnings (a file path or ``environment``).
        warn: Receives each warning.
        lines: Gives the line of each key of a file layer (asked only when there is something to warn about), so a
            warning names ``file:line``.

    Returns:
        A tree that validates on its own.
    """
    where = _Where(source, lines)
    tree = _known_only(layer, IronHiveConfig, ((), ()), where, warn)
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
                    warn(f"Invalid value for config key '{'.'.join(path)}' in {where.at(path)} ignored: {item['msg']}")
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


class _Where:
    """Names where a key of a layer is: ``source:line`` for a file whose key lines are known, else ``source``."""

    def __init__(self, source: str, lines: Callable[[], KeyLines] | None) -> None:
        self._source = source
        self._lines = lines
        self._known: KeyLines | None = None
        self.canonical: dict[tuple[str, ...], tuple[str, ...]] = {}
        """The written path of each key under its canonical spelling (what validation errors name)."""

    def at(self, path: tuple[str, ...]) -> str:
        if self._lines is None:
            return self._source
        if self._known is None:
            try:
                self._known = self._lines()
            except Exception:  # the line is a help, never a reason to fail: the parse already succeeded
                self._known = {}
        line = self._known.get(self.canonical.get(path, path))
        return self._source if line is None else f"{self._source}:{line}"


def _known_only(
    tree: Mapping[Any, Any],
    model: type[ConfigSection],
    prefixes: tuple[tuple[str, ...], tuple[str, ...]],
    where: _Where,
    warn: _Warn,
) -> dict[str, Any]:
    """``tree`` without unknown keys, its keys in their canonical spelling; ``prefixes``: its written and canonical
    paths."""
    accepted = accepted_keys(model)
    kept: dict[str, Any] = {}
    prefix, canonical_prefix = prefixes
    for key, value in tree.items():
        path = (*prefix, str(key))
        if not isinstance(key, str) or key not in accepted:
            warn(f"Unknown config key '{'.'.join(path)}' in {where.at(path)} ignored")
            continue
        if value is None:
            continue
        canonical = canonical_key(model, key)
        canonical_path = (*canonical_prefix, canonical)
        where.canonical[canonical_path] = path
        nested = section_model(accepted[key].annotation)
        if nested is not None and isinstance(value, Mapping):
            value = _known_only(value, nested, (path, canonical_path), where, warn)
        kept[canonical] = value
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


def _other_untrusted_files(project: Path, trust: ProjectTrust) -> list[tuple[str, tuple[Path, str]]]:
    """The project's permission and plugin files that are not trusted, each with a note of what is held back.

    A file that cannot be read is left to its own loader, which reports it when it reads it.
    """
    from ironhive.adapters.mcp.plugin_files import find_project_plugin_file
    from ironhive.adapters.permissions.loader import find_permission_file

    found: list[tuple[str, tuple[Path, str]]] = []
    candidates = (
        (find_permission_file(project), "the allow rules and widening settings of {} (its deny and ask rules apply)"),
        (find_project_plugin_file(project), "the MCP servers of {}"),
    )
    for path, note in candidates:
        if path is None:
            continue
        try:
            data = read_limited_bytes(path)
        except ConfigurationError:
            continue
        if data is None:
            continue
        digest = sha256_of(data)
        if not trust.is_trusted(path, digest):
            found.append((note.format(path), (path, digest)))
    return found


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return False


def project_trust_files(project: Path, home: Path) -> tuple[Path, ...]:
    """The project's files that need trust to take effect, those that exist: its ``.ironhive/config.yaml``, its
    permission file, its plugin file and its ``.env`` (the first that exists of each kind)."""
    from ironhive.adapters.mcp.plugin_files import find_project_plugin_file
    from ironhive.adapters.permissions.loader import find_permission_file

    config_file = project_config_path(project)
    candidates = (
        None if _same_file(config_file, global_config_path(home)) else config_file,
        find_permission_file(project),
        find_project_plugin_file(project),
        dotenv_path(project),
    )
    return tuple(path for path in candidates if path is not None and (path.exists() or path.is_symlink()))
