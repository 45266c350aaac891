"""Loads the permission policy: the project's permission file, else config.yaml's section, else the defaults.

Sources, first present wins (a present source is a complete policy; omitted categories are empty, not defaults):

1. ``<project>/.ironhive/permissions.yaml``, ``.yml`` or ``.json`` — a top-level ``permissions`` mapping with snake_case
   keys. JSON property names are case-insensitive (``externalDirectory`` is accepted too), and comments and trailing
   commas are allowed.
2. The camelCase ``permissions`` mapping of config.yaml, handed in by the caller.
3. ``DEFAULT_POLICY``.

Anything wrong with a present source raises ``ConfigurationError`` naming the source and the problem: the defaults
allow more than a restrictive file would, so a typo must never silently fall back to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher
from ironhive.adapters.permissions.jsonc import JsoncSyntaxError, to_plain_json
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule

PERMISSION_FILE_NAMES = ("permissions.yaml", "permissions.yml", "permissions.json")
CONFIG_SECTION_SOURCE = "config.yaml permissions section"

_RULE_KEYS = ("pattern", "action", "priority", "reason")
_SECTION_KEYS = (
    "read",
    "edit",
    "bash",
    "external_directory",
    "mcp_tools",
    "tools",
    "read_only_tools",
    "ask_before_delete",
    "default_action",
)
_PATH_CATEGORIES = ("read", "edit", "external_directory")
_MAX_REPORTED = 5


def _parse_action(value: str | None) -> str | None:
    if value is None:
        return None
    action = value.strip().lower()
    if action not in {member.value for member in PermissionAction}:
        raise ValueError(f"'{value}' is not an action (allow, deny or ask)")
    return action


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: StrictStr
    action: StrictStr | None = None
    priority: StrictInt = 0
    reason: StrictStr | None = None

    @field_validator("pattern")
    @classmethod
    def _pattern_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the pattern is blank")
        return value

    @field_validator("action")
    @classmethod
    def _known_action(cls, value: str | None) -> str | None:
        return _parse_action(value)


class _Section(BaseModel):
    """The snake_case section of a permission file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read: list[_Rule] | None = None
    edit: list[_Rule] | None = None
    bash: list[_Rule] | None = None
    external_directory: list[_Rule] | None = None
    mcp_tools: list[_Rule] | None = None
    tools: list[_Rule] | None = None
    read_only_tools: list[StrictStr] | None = None
    ask_before_delete: StrictBool | None = None
    default_action: StrictStr | None = None

    @field_validator("default_action")
    @classmethod
    def _known_default(cls, value: str | None) -> str | None:
        return _parse_action(value)


class _CamelSection(_Section):
    """The camelCase section of config.yaml (``externalDirectory``, ``mcpTools``, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel)


def load_permission_policy(project_root: Path, config_section: Mapping[str, object] | None) -> PermissionPolicy:
    """Resolve the permission policy by the documented precedence.

    Args:
        project_root: The project (working) directory; its ``.ironhive/`` folder is searched for a permission file.
        config_section: The merged ``permissions`` mapping of config.yaml, or ``None`` when no layer has one.

    Returns:
        The policy of the first present source, or ``DEFAULT_POLICY``.

    Raises:
        ConfigurationError: The permission file or the config.yaml section cannot be read or is not a valid policy.
    """
    for name in PERMISSION_FILE_NAMES:
        path = project_root / ".ironhive" / name
        if path.exists():
            return load_permission_file(path)
    if config_section is not None:
        return policy_from_config_section(config_section)
    return DEFAULT_POLICY


def load_permission_file(path: Path) -> PermissionPolicy:
    """Read one permission file (``.yaml``/``.yml``: snake_case YAML; ``.json``: lenient JSON).

    Args:
        path: The file.

    Returns:
        The file's complete policy.

    Raises:
        ConfigurationError: The file cannot be read, does not parse, or is not a valid permission policy.
    """
    source = f"permission file '{path}'"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"Cannot read {source}: {error}") from error
    if path.suffix.lower() == ".json":
        document = _parse_json(text, source)
        section = _unwrap(_normalize_json_keys(document, source), source)
    else:
        section = _unwrap(_parse_yaml(text, source), source)
    return _build(section, _Section, source, "permissions")


def policy_from_config_section(section: object) -> PermissionPolicy:
    """Build the policy from config.yaml's camelCase ``permissions`` mapping (a complete policy).

    Args:
        section: The mapping under ``permissions`` in the merged config.yaml.

    Returns:
        The section's policy; categories it omits are empty.

    Raises:
        ConfigurationError: The section is not a valid permission policy.
    """
    source = CONFIG_SECTION_SOURCE
    if not isinstance(section, Mapping):
        raise ConfigurationError(f"Invalid {source}: 'permissions' must be a mapping, not {_kind(section)}")
    return _build(section, _CamelSection, source, "permissions")


# -- parsing ----------------------------------------------------------------------------------------------------


def _parse_yaml(text: str, source: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = error.problem or error.context or "malformed YAML"
        raise ConfigurationError(f"Invalid {source}: YAML syntax error{where}: {problem}") from error
    except yaml.YAMLError as error:
        raise ConfigurationError(f"Invalid {source}: YAML syntax error: {error}") from error


def _parse_json(text: str, source: str) -> object:
    try:
        return json.loads(to_plain_json(text), object_pairs_hook=_KeyValuePairs)
    except JsoncSyntaxError as error:
        raise ConfigurationError(f"Invalid {source}: JSON syntax error at line {error.line}: {error}") from error
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise ConfigurationError(f"Invalid {source}: JSON syntax error at {where}: {error.msg}") from error


class _KeyValuePairs(list[tuple[str, object]]):
    """A JSON object as its key/value pairs, so case-insensitive duplicates can be found before they collapse."""


def _normalize_json_keys(document: object, source: str) -> object:
    """Rename JSON keys to the snake_case names (case-insensitive; camelCase accepted); unknown keys stay as written."""
    if not isinstance(document, _KeyValuePairs):
        return _plain(document)
    top = _rekey(document, {"permissions": "permissions"}, source, "the top level")
    section = top.get("permissions")
    if isinstance(section, _KeyValuePairs):
        aliases = {key: key for key in _SECTION_KEYS} | {key.replace("_", ""): key for key in _SECTION_KEYS}
        renamed = _rekey(section, aliases, source, "permissions")
        for key, value in renamed.items():
            if isinstance(value, list) and not isinstance(value, _KeyValuePairs) and key != "read_only_tools":
                renamed[key] = [
                    _rekey(rule, {k: k for k in _RULE_KEYS}, source, f"permissions.{key}[{index}]")
                    if isinstance(rule, _KeyValuePairs)
                    else _plain(rule)
                    for index, rule in enumerate(value)
                ]
            else:
                renamed[key] = _plain(value)
        top["permissions"] = renamed
    return top


def _rekey(pairs: _KeyValuePairs, aliases: Mapping[str, str], source: str, where: str) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        name = aliases.get(key.lower(), key)
        if name in result:
            raise ConfigurationError(f"Invalid {source}: duplicate key '{key}' in {where} (keys are case-insensitive)")
        result[name] = value
    return result


def _plain(value: object) -> object:
    if isinstance(value, _KeyValuePairs):
        return {key: _plain(item) for key, item in value}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _unwrap(document: object, source: str) -> Mapping[str, object]:
    if not isinstance(document, Mapping) or "permissions" not in document:
        raise ConfigurationError(f"Invalid {source}: no top-level 'permissions' mapping")
    unknown = [str(key) for key in document if key != "permissions"]
    if unknown:
        raise ConfigurationError(f"Invalid {source}: unknown top-level key '{unknown[0]}'")
    section = document["permissions"]
    if not isinstance(section, Mapping):
        raise ConfigurationError(f"Invalid {source}: 'permissions' must be a mapping, not {_kind(section)}")
    return section


# -- validation and building ------------------------------------------------------------------------------------


def _build(section: Mapping[str, object], model: type[_Section], source: str, prefix: str) -> PermissionPolicy:
    try:
        parsed = model.model_validate(section)
    except ValidationError as error:
        raise ConfigurationError(f"Invalid {source}: {_describe(error, prefix)}") from error
    for category in _PATH_CATEGORIES:
        for index, rule in enumerate(getattr(parsed, category) or []):
            problem = GitIgnorePathMatcher.compile_error(rule.pattern)
            if problem is not None:
                shown = _alias(category, model)
                raise ConfigurationError(
                    f"Invalid {source}: {prefix}.{shown}[{index}].pattern '{rule.pattern}' is not a valid path "
                    f"pattern: {problem}"
                )
    return PermissionPolicy(
        read=_rules(parsed.read),
        edit=_rules(parsed.edit),
        bash=_rules(parsed.bash),
        external_directory=_rules(parsed.external_directory),
        mcp_tools=_rules(parsed.mcp_tools),
        tools=_rules(parsed.tools),
        read_only_tools=tuple(parsed.read_only_tools or ()),
        ask_before_delete=True if parsed.ask_before_delete is None else parsed.ask_before_delete,
        default_action=PermissionAction(parsed.default_action or PermissionAction.ASK),
    )


def _rules(rules: Sequence[_Rule] | None) -> tuple[PermissionRule, ...]:
    return tuple(
        PermissionRule(
            pattern=rule.pattern,
            action=PermissionAction(rule.action or PermissionAction.ASK),
            priority=rule.priority,
            reason=rule.reason,
        )
        for rule in rules or ()
    )


def _alias(field: str, model: type[_Section]) -> str:
    alias = model.model_fields[field].alias
    return alias or field


def _describe(error: ValidationError, prefix: str) -> str:
    problems: list[str] = []
    for detail in error.errors()[:_MAX_REPORTED]:
        location = tuple(detail["loc"])
        where = _format_location(prefix, location[:-1]) if location else prefix
        here = _format_location(prefix, location)
        kind = detail["type"]
        if kind == "extra_forbidden":
            problems.append(f"unknown key '{location[-1]}' in {where}")
        elif kind in ("missing", "value_error") and location[-1] == "pattern":
            problems.append(f"the rule {where} has no pattern")
        elif kind == "value_error":
            message = str(detail.get("ctx", {}).get("error", detail["msg"]))
            problems.append(f"{message} at {here}")
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            problems.append(f"{here} must be a mapping, not {_kind(detail.get('input'))}")
        else:
            problems.append(f"{here}: {detail['msg']}")
    hidden = error.error_count() - len(problems)
    if hidden > 0:
        problems.append(f"and {hidden} more")
    return "; ".join(problems)


def _format_location(prefix: str, location: Sequence[int | str]) -> str:
    text = prefix
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _kind(value: object) -> str:
    if value is None:
        return "empty"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"the {type(value).__name__} {value!r}"
