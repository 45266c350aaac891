"""Loads the permission policy: the project's permission file, else config.yaml's section, else the defaults.

Sources, first present wins (a present source is a complete policy; omitted categories are empty, not defaults):

1. ``<project>/.ironhive/permissions.yaml``, ``.yml`` or ``.json`` — a top-level ``permissions`` mapping with snake_case
   keys. JSON property names are case-insensitive (``externalDirectory`` is accepted too), and comments and trailing
   commas are allowed.
2. The camelCase ``permissions`` mapping of config.yaml, handed in by the caller.
3. ``DEFAULT_POLICY``.

Anything wrong with a present source raises ``ConfigurationError`` naming the source and the problem: the defaults
allow more than a restrictive file would, so a typo must never silently fall back to them. Files are read by the
bounded reader of :mod:`ironhive.adapters.config.safe_files` (regular files of at most 1 MiB, YAML without duplicate
keys, deep nesting or alias bombs).

The project's sources are a repository's: until the user trusts their exact content
(:mod:`ironhive.adapters.config.trust`), they only narrow. The user's own policy (the config.yaml section of the
trusted layers, else ``DEFAULT_POLICY``) is the base, and an untrusted permission file and an untrusted project
config.yaml's ``permissions`` section add only their deny and ask rules
(:mod:`ironhive.adapters.permissions.narrowing`).
A model that writes ``.ironhive/permissions.yaml`` therefore changes nothing it could use: the new content is not
trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from ironhive.adapters.config.files import CONFIG_DIRECTORY, project_config_path
from ironhive.adapters.config.safe_files import (
    JsonNestingError,
    decode_text,
    load_yaml,
    read_limited_bytes,
)
from ironhive.adapters.config.trust import ProjectTrust, sha256_of
from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher
from ironhive.adapters.permissions.jsonc import JsoncSyntaxError, load_jsonc
from ironhive.adapters.permissions.narrowing import narrow
from ironhive.adapters.validation_errors import case_insensitive_keys, describe_validation_error, kind_of
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


def find_permission_file(project_root: Path) -> Path | None:
    """The project's permission file: the first of :data:`PERMISSION_FILE_NAMES` in ``.ironhive/`` that exists."""
    for name in PERMISSION_FILE_NAMES:
        path = project_root / CONFIG_DIRECTORY / name
        if path.exists() or path.is_symlink():
            return path
    return None


def load_permission_policy(
    project_root: Path, config_section: Mapping[str, object] | None, *, trust: ProjectTrust | None = None
) -> PermissionPolicy:
    """Resolve the permission policy by the documented precedence, narrowing only by untrusted project sources.

    Args:
        project_root: The project (working) directory; its ``.ironhive/`` folder is searched for a permission file.
        config_section: The merged ``permissions`` mapping of config.yaml (of the layers that may set it: the config
            loader leaves out an untrusted project file's section), or ``None`` when no layer has one.
        trust: Which project files may take effect (the user's trust store and ``os.environ`` when omitted).

    Returns:
        The policy of the first present trusted source, or ``DEFAULT_POLICY``, narrowed by the untrusted ones.

    Raises:
        ConfigurationError: The permission file or the config.yaml section cannot be read or is not a valid policy.
    """
    trust = trust if trust is not None else ProjectTrust.for_user()
    narrowing: list[PermissionPolicy] = []
    path = find_permission_file(project_root)
    if path is not None:
        policy, digest = _read_permission_file(path)
        if trust.is_trusted(path, digest):
            return policy
        narrowing.append(policy)
    untrusted_section = _untrusted_config_section(project_root, trust)
    if untrusted_section is not None:
        narrowing.insert(0, untrusted_section)
    base = policy_from_config_section(config_section) if config_section is not None else DEFAULT_POLICY
    for policy in narrowing:
        base = narrow(base, policy)
    return base


def load_permission_file(path: Path) -> PermissionPolicy:
    """Read one permission file (``.yaml``/``.yml``: snake_case YAML; ``.json``: lenient JSON).

    Args:
        path: The file.

    Returns:
        The file's complete policy.

    Raises:
        ConfigurationError: The file cannot be read, is refused (not a regular file, over 1 MiB), does not parse, or
            is not a valid permission policy.
    """
    return _read_permission_file(path)[0]


def _read_permission_file(path: Path) -> tuple[PermissionPolicy, str]:
    source = f"permission file '{path}'"
    data = read_limited_bytes(path)  # refuses FIFOs, devices and oversized files, naming the file
    if data is None:
        raise ConfigurationError(f"Cannot read {source}: it does not exist")
    text = decode_text(path, data)
    if path.suffix.lower() == ".json":
        document = _parse_json(text, source)
        section = _unwrap(_normalize_json_keys(document, source), source)
    else:
        section = _unwrap(_parse_yaml(text, source), source)
    return _build(section, _Section, source, "permissions"), sha256_of(data)


def _untrusted_config_section(project_root: Path, trust: ProjectTrust) -> PermissionPolicy | None:
    """The ``permissions`` section of the project's config.yaml when that file is not trusted (it only narrows).

    A file that cannot be read or parsed was already reported by the config loader, which ignored it whole.
    """
    from ironhive.adapters.config.files import read_yaml_file

    path = project_config_path(project_root)
    try:
        read = read_yaml_file(path)
    except ConfigurationError:
        return None
    if read is None or trust.is_trusted(path, sha256_of(read[1])):
        return None
    section = read[0].get("permissions")
    if section is None:
        return None
    return _build_section(section, f"permissions section of the untrusted '{path}'")


def policy_from_config_section(section: object) -> PermissionPolicy:
    """Build the policy from config.yaml's camelCase ``permissions`` mapping (a complete policy).

    Args:
        section: The mapping under ``permissions`` in the merged config.yaml.

    Returns:
        The section's policy; categories it omits are empty.

    Raises:
        ConfigurationError: The section is not a valid permission policy.
    """
    return _build_section(section, CONFIG_SECTION_SOURCE)


def _build_section(section: object, source: str) -> PermissionPolicy:
    if not isinstance(section, Mapping):
        raise ConfigurationError(f"Invalid {source}: 'permissions' must be a mapping, not {kind_of(section)}")
    # config.yaml's permissions.sandbox configures the command sandbox (read by the config schema), not a rule.
    rules = {key: value for key, value in section.items() if key != "sandbox"}
    return _build(rules, _CamelSection, source, "permissions")


# -- parsing ----------------------------------------------------------------------------------------------------


def _parse_yaml(text: str, source: str) -> object:
    try:
        return load_yaml(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = error.problem or error.context or "malformed YAML"
        raise ConfigurationError(f"Invalid {source}: YAML syntax error{where}: {problem}") from error
    except yaml.YAMLError as error:
        raise ConfigurationError(f"Invalid {source}: YAML syntax error: {error}") from error


def _parse_json(text: str, source: str) -> object:
    try:
        return load_jsonc(text, object_pairs_hook=_KeyValuePairs)
    except JsonNestingError as error:
        raise ConfigurationError(f"Invalid {source}: JSON {error} (line {error.line})") from error
    except JsoncSyntaxError as error:
        where = f"line {error.line}, column {error.column}"
        raise ConfigurationError(f"Invalid {source}: JSON syntax error at {where}: {error}") from error


class _KeyValuePairs(list[tuple[str, object]]):
    """A JSON object as its key/value pairs, so case-insensitive duplicates can be found before they collapse."""


def _normalize_json_keys(document: object, source: str) -> object:
    """Rename JSON keys to the snake_case names (case-insensitive; camelCase accepted); unknown keys stay as written."""
    if not isinstance(document, _KeyValuePairs):
        return _plain(document)
    top = case_insensitive_keys(document, {"permissions": "permissions"}, source, "the top level")
    section = top.get("permissions")
    if isinstance(section, _KeyValuePairs):
        aliases = {key: key for key in _SECTION_KEYS} | {key.replace("_", ""): key for key in _SECTION_KEYS}
        renamed = case_insensitive_keys(section, aliases, source, "permissions")
        for key, value in renamed.items():
            if isinstance(value, list) and not isinstance(value, _KeyValuePairs) and key != "read_only_tools":
                renamed[key] = [
                    case_insensitive_keys(rule, {k: k for k in _RULE_KEYS}, source, f"permissions.{key}[{index}]")
                    if isinstance(rule, _KeyValuePairs)
                    else _plain(rule)
                    for index, rule in enumerate(value)
                ]
            else:
                renamed[key] = _plain(value)
        top["permissions"] = renamed
    return top


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
        raise ConfigurationError(f"Invalid {source}: 'permissions' must be a mapping, not {kind_of(section)}")
    return section


# -- validation and building ------------------------------------------------------------------------------------


def _build(section: Mapping[str, object], model: type[_Section], source: str, prefix: str) -> PermissionPolicy:
    try:
        parsed = model.model_validate(section)
    except ValidationError as error:
        raise ConfigurationError(
            f"Invalid {source}: {describe_validation_error(error, prefix=prefix, special=_rule_without_pattern)}"
        ) from error
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


def _rule_without_pattern(detail: ErrorDetails, here: str, where: str) -> str | None:
    """A rule lacking its pattern is named as the rule (``the rule permissions.bash[0] has no pattern``)."""
    location = detail["loc"]
    if detail["type"] in ("missing", "value_error") and location and location[-1] == "pattern":
        return f"the rule {where} has no pattern"
    return None
