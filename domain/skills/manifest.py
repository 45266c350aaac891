"""A validated skill's front matter and where it lives, and the problems found while discovering skills."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

LOAD_SKILL_TOOL_NAME = "load_skill"
"""The name of the tool the model calls to read a skill's instructions or one of its files."""

SKILL_FILE_NAME = "SKILL.md"
"""The file that makes a directory a skill."""

Severity: TypeAlias = Literal["error", "warning"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillManifest:
    """A skill's front matter as the specification defines it, plus where it was found.

    The body is not here: ``load_skill`` reads it on demand, which is the point of the format.

    Attributes:
        name: 1–64 characters of ``a-z``, ``0-9`` and single hyphens, equal to the directory name (NFKC).
        description: What the skill does and when to use it (1–1024 characters).
        license: The optional ``license``.
        compatibility: The optional ``compatibility`` (1–500 characters).
        metadata: The optional ``metadata`` map, string to string.
        allowed_tools: The optional ``allowed-tools``, split on whitespace; parsed, not enforced.
        directory: The skill's directory: ``load_skill`` reads nothing outside it.
        skill_file: The ``SKILL.md`` file.
        root: The configured root the skill was found under (absolute).
    """

    name: str
    description: str
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    directory: Path
    skill_file: Path
    root: Path


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillProblem:
    """Something discovery could not use, or used with a reservation.

    Attributes:
        severity: ``error`` (a skill or root was not used) or ``warning`` (used, but something was ignored).
        message: What happened, fit to show a user.
    """

    severity: Severity
    message: str
