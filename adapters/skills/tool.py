"""The ``load_skill`` tool: a skill's instructions, or a file inside its directory, and nothing outside it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath

from ironhive.adapters.tools.arguments import object_schema, validate_arguments
from ironhive.adapters.tools.base import MAX_TEXT_BYTES, human_size, looks_binary, sniff, text_encoding
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.domain.skills.frontmatter import split_front_matter
from ironhive.domain.skills.manifest import LOAD_SKILL_TOOL_NAME, SkillManifest
from ironhive.ports.chat import JsonValue, ToolSpec

DESCRIPTION = (
    "Loads the full instructions of an available skill by name. With a path (relative to the skill's directory, "
    "e.g. references/REFERENCE.md), reads that file of the skill instead."
)

PARAMETERS = object_schema(
    {
        "name": {"type": "string", "description": "The skill's name, as listed in the instructions."},
        "path": {
            "type": "string",
            "description": (
                "Optional: a file inside the skill's directory, relative to it (e.g. references/REFERENCE.md). "
                "Omit to load the skill's own instructions."
            ),
        },
    },
    required=["name"],
)


class LoadSkillTool:
    """The ``load_skill`` tool over a fixed set of skills.

    The skill's directory is the boundary: an absolute path, a ``..`` that leaves the directory or a symbolic link
    resolving outside it is refused with a ToolError that says why, so "instructions on demand" cannot become "read
    any file".

    Args:
        skills: The skills the session may load (including those the metadata block had no room for).
    """

    def __init__(self, skills: Sequence[SkillManifest]) -> None:
        self._skills = {skill.name: skill for skill in skills}
        self._spec = ToolSpec(name=LOAD_SKILL_TOOL_NAME, description=DESCRIPTION, parameters=PARAMETERS)

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema, as the model sees them."""
        return self._spec

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Return the skill's body (without front matter), or the text of a file inside its directory.

        Raises:
            ToolArgumentError: ``name`` is missing.
            ToolError: No such skill, the path leaves the skill's directory, or the file cannot be read.
        """
        validated = validate_arguments(LOAD_SKILL_TOOL_NAME, PARAMETERS, arguments)
        name = validated.string("name").strip()
        skill = self._skills.get(name)
        if skill is None:
            raise ToolError(self._unknown(name))
        path = validated.optional_string("path")
        try:
            if path is None or not path.strip():
                return await asyncio.to_thread(_read_body, skill)
            return await asyncio.to_thread(_read_inside, skill, path.strip())
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop met by resolve()
            shown = path or skill.skill_file.name
            raise ToolError(f"'{shown}' in the skill '{skill.name}' could not be read: {exc}") from exc

    def _unknown(self, name: str) -> str:
        if not self._skills:
            return f"No skill named '{name}': no skills are available in this session."
        return f"No skill named '{name}'. Available: {', '.join(sorted(self._skills))}."


def _read_body(skill: SkillManifest) -> str:
    content = _read_text(skill, skill.skill_file, skill.skill_file.name)
    split = split_front_matter(content)
    return (split.body if split is not None else content).strip()


def _read_inside(skill: SkillManifest, path: str) -> str:
    if "\0" in path:
        raise ToolArgumentError(f"Parameter 'path' of tool '{LOAD_SKILL_TOOL_NAME}' contains a NUL character")
    refusal = (
        f"Refused: '{path}' is outside the skill '{skill.name}' and cannot be read through it. "
        "Paths are relative to the skill's directory (for example references/REFERENCE.md)."
    )
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() or PureWindowsPath(path).drive:
        raise ToolError(refusal)
    base = skill.directory.resolve()
    # resolve() follows every symbolic link, so a link inside the skill pointing elsewhere is judged by its target.
    target = (skill.directory / path).resolve()
    if not target.is_relative_to(base):
        raise ToolError(refusal)
    if not target.exists():
        raise ToolError(f"The skill '{skill.name}' has no file '{path}'.")
    if target.is_dir():
        entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in target.iterdir())
        listing = ", ".join(entries[:50]) or "(empty)"
        raise ToolError(f"'{path}' in the skill '{skill.name}' is a directory; name a file inside it: {listing}")
    return _read_text(skill, target, path)


def _read_text(skill: SkillManifest, file: Path, shown: str) -> str:
    try:
        size = file.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise ToolError(
                f"'{shown}' in the skill '{skill.name}' is {human_size(size)}; files over "
                f"{human_size(MAX_TEXT_BYTES)} are not loaded."
            )
        head = sniff(file)
        if looks_binary(head):
            raise ToolError(f"'{shown}' in the skill '{skill.name}' is not a text file.")
        return file.read_text(encoding=text_encoding(head), errors="replace")
    except OSError as exc:
        raise ToolError(f"'{shown}' in the skill '{skill.name}' could not be read: {exc.strerror or exc}") from exc
