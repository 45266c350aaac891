"""The Agent Skills specification's front matter rules, applied as the reference validator applies them."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ironhive.domain.skills.manifest import SkillManifest

ALLOWED_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
"""The front matter keys the specification defines; any other key is unexpected."""

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500

_NAME_PATTERN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@dataclass(frozen=True, kw_only=True, slots=True)
class FrontMatterCheck:
    """The outcome of validating one skill's front matter.

    Attributes:
        manifest: The skill, or ``None`` when it is rejected.
        errors: Why it was rejected (empty when it was not).
        warnings: What was accepted with a reservation (unexpected fields when they are accepted).
    """

    manifest: SkillManifest | None
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def validate_front_matter(
    fields: Mapping[str, object],
    *,
    directory: Path,
    skill_file: Path,
    root: Path,
    accept_unknown_fields: bool = False,
) -> FrontMatterCheck:
    """Check parsed front matter against the specification and build the skill from it.

    Rules: ``name`` matches ``^[a-z0-9]+(-[a-z0-9]+)*$``, is 1–64 characters and equals the directory's name (both
    compared after NFKC normalisation); ``description`` has 1–1024 characters; ``compatibility`` 1–500 when present;
    ``license`` a string; ``metadata`` a map of strings to strings; ``allowed-tools`` a string or a list of strings.
    Keys outside :data:`ALLOWED_FIELDS` reject the skill, unless ``accept_unknown_fields``, which ignores them with a
    warning. Every rule is checked, so one pass reports every error.

    Args:
        fields: The front matter, parsed (scalars as strings, as the specification's validator reads them).
        directory: The skill's directory (its name must match the skill's).
        skill_file: The ``SKILL.md`` file.
        root: The root the skill was found under.
        accept_unknown_fields: Admit skills carrying keys the specification does not define.

    Returns:
        The skill or the reasons it was rejected.
    """
    errors: list[str] = []
    warnings: list[str] = []
    unexpected = sorted(key for key in fields if key not in ALLOWED_FIELDS)
    if unexpected:
        message = (
            f"Unexpected fields in front matter: {', '.join(unexpected)}. Only {', '.join(sorted(ALLOWED_FIELDS))} "
            "are allowed; extension keys belong under 'metadata'."
        )
        if accept_unknown_fields:
            warnings.append(f"{message} They are ignored (acceptUnknownFields).")
        else:
            errors.append(message)

    name = _check_name(fields, directory, errors)
    description = _check_description(fields, errors)
    license_text = _optional_text(fields, "license", errors)
    compatibility = _check_compatibility(fields, errors)
    metadata = _check_metadata(fields, errors)
    allowed_tools = _check_allowed_tools(fields, errors)

    if errors or name is None or description is None:
        return FrontMatterCheck(manifest=None, errors=tuple(errors), warnings=tuple(warnings))
    manifest = SkillManifest(
        name=name,
        description=description,
        license=license_text,
        compatibility=compatibility,
        metadata=metadata,
        allowed_tools=allowed_tools,
        directory=directory,
        skill_file=skill_file,
        root=root,
    )
    return FrontMatterCheck(manifest=manifest, warnings=tuple(warnings))


def is_valid_skill_name(name: str) -> bool:
    """Whether ``name`` (already NFKC-normalised) is 1–64 characters of ``a-z``, ``0-9`` and single hyphens."""
    return 1 <= len(name) <= MAX_NAME_LENGTH and _NAME_PATTERN.fullmatch(name) is not None


def _check_name(fields: Mapping[str, object], directory: Path, errors: list[str]) -> str | None:
    value = fields.get("name")
    if value is None:
        errors.append("Missing required field in front matter: name.")
        return None
    if not isinstance(value, str) or not value.strip():
        errors.append("Field 'name' must be a non-empty string.")
        return None
    name = unicodedata.normalize("NFKC", value)
    if len(name) > MAX_NAME_LENGTH:
        errors.append(f"Skill name '{name}' is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}.")
        return None
    if not is_valid_skill_name(name):
        errors.append(
            f"Skill name '{name}' must be lowercase letters a-z, digits 0-9 and single hyphens, "
            "not starting or ending with a hyphen."
        )
        return None
    if unicodedata.normalize("NFKC", directory.name) != name:
        errors.append(f"Directory name '{directory.name}' must match skill name '{name}'.")
        return None
    return name


def _check_description(fields: Mapping[str, object], errors: list[str]) -> str | None:
    value = fields.get("description")
    if value is None:
        errors.append("Missing required field in front matter: description.")
        return None
    if not isinstance(value, str) or not value.strip():
        errors.append("Field 'description' must be a non-empty string.")
        return None
    if len(value) > MAX_DESCRIPTION_LENGTH:
        errors.append(f"Description is {len(value)} characters long; the limit is {MAX_DESCRIPTION_LENGTH}.")
        return None
    return value


def _check_compatibility(fields: Mapping[str, object], errors: list[str]) -> str | None:
    if "compatibility" not in fields:
        return None
    value = fields["compatibility"]
    if not isinstance(value, str) or not value:
        errors.append(f"Field 'compatibility' must be a string of 1 to {MAX_COMPATIBILITY_LENGTH} characters.")
        return None
    if len(value) > MAX_COMPATIBILITY_LENGTH:
        errors.append(f"Compatibility is {len(value)} characters long; the limit is {MAX_COMPATIBILITY_LENGTH}.")
        return None
    return value


def _optional_text(fields: Mapping[str, object], key: str, errors: list[str]) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(f"Field '{key}' must be a string.")
        return None
    return value or None


def _check_metadata(fields: Mapping[str, object], errors: list[str]) -> dict[str, str]:
    value = fields.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        errors.append("Field 'metadata' must map string keys to string values.")
        return {}
    return {str(key): str(item) for key, item in value.items()}


def _check_allowed_tools(fields: Mapping[str, object], errors: list[str]) -> tuple[str, ...]:
    value = fields.get("allowed-tools")
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(str(item).strip() for item in value if str(item).strip())
    errors.append("Field 'allowed-tools' must be a string or a list of strings.")
    return ()
