"""SkillsLoader: finds ``SKILL.md`` bundles under the configured roots, validates them and offers ``load_skill``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ironhive.adapters.config.safe_files import load_yaml, read_limited_text
from ironhive.adapters.skills.tool import LoadSkillTool
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.skills.catalog import MetadataBlock, render_metadata_block, select_skills
from ironhive.domain.skills.frontmatter import split_front_matter
from ironhive.domain.skills.manifest import SKILL_FILE_NAME, Severity, SkillManifest, SkillProblem
from ironhive.domain.skills.validation import validate_front_matter

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import SkillsSection


class SkillsLoader:
    """The skills of one session: discovered, validated and selected once, at construction.

    Roots are scanned in order; relative roots resolve against ``cwd`` and a leading ``~`` expands to ``home``. Each
    subdirectory of a root that holds a ``SKILL.md`` is a candidate, taken in name order. A skill whose front matter
    the specification rejects is not loaded; on a name clash the first root wins and the later skill is reported as
    shadowed. ``enabled`` (when given) restricts and orders the skills, ``exclude`` removes some. Everything that
    could not be used is in :attr:`problems`; nothing found on disk raises.

    Construction reads the disk (a few small files): call it off the event loop
    (``await asyncio.to_thread(SkillsLoader, roots, ...)``) where that matters.

    Args:
        roots: Directories holding skill directories, in priority order.
        enabled: Only these skills, in this order (``None``: every valid skill).
        exclude: Skills to leave out.
        max_metadata_characters: Budget of the metadata block in the system instructions.
        accept_unknown_fields: Admit skills with front matter keys the specification does not define (warned).
        home: What ``~`` expands to (the user's home when omitted).
        cwd: What relative roots resolve against (the process's working directory when omitted).
    """

    def __init__(
        self,
        roots: Sequence[str | Path],
        *,
        enabled: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        max_metadata_characters: int = 12000,
        accept_unknown_fields: bool = False,
        home: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self._home = home
        self._cwd = cwd if cwd is not None else Path.cwd()
        self._accept_unknown_fields = accept_unknown_fields
        self._problems: list[SkillProblem] = []
        self._roots: list[Path] = []
        found = self._discover(roots)
        selected, selection_problems = select_skills(found, enabled=enabled, exclude=exclude)
        self._problems.extend(selection_problems)
        self._skills = selected
        self._block: MetadataBlock = render_metadata_block(selected, max_metadata_characters)
        if self._block.dropped:
            names = ", ".join(skill.name for skill in self._block.dropped)
            self._problems.append(
                SkillProblem(
                    severity="warning",
                    message=(
                        f"{len(self._block.dropped)} skill(s) did not fit maxMetadataCharacters "
                        f"({max_metadata_characters}) and are not listed in the instructions: {names}. "
                        "load_skill still accepts their names."
                    ),
                )
            )
        self._load_tool = LoadSkillTool(selected)

    @classmethod
    def from_section(cls, section: SkillsSection, *, home: Path | None = None, cwd: Path | None = None) -> SkillsLoader:
        """Build the loader from the ``skills`` config section.

        Args:
            section: The merged ``skills`` section.
            home: What ``~`` expands to.
            cwd: What relative roots resolve against.

        Returns:
            The loader; check :attr:`active` before adding its tool and block.
        """
        return cls(
            section.roots,
            enabled=section.enabled,
            exclude=section.exclude,
            max_metadata_characters=section.max_metadata_characters,
            accept_unknown_fields=section.accept_unknown_fields,
            home=home,
            cwd=cwd,
        )

    @property
    def active(self) -> bool:
        """Whether some root names an existing directory (otherwise skills are off: add neither tool nor block)."""
        return bool(self._roots)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The roots that exist, absolute, in priority order."""
        return tuple(self._roots)

    @property
    def skills(self) -> tuple[SkillManifest, ...]:
        """The skills this session may use, in the order the model sees them."""
        return self._skills

    @property
    def listed(self) -> tuple[SkillManifest, ...]:
        """The skills the metadata block names."""
        return self._block.listed

    @property
    def dropped(self) -> tuple[SkillManifest, ...]:
        """The skills the metadata block had no room for (``load_skill`` still knows them)."""
        return self._block.dropped

    @property
    def problems(self) -> list[str]:
        """What could not be used (or was used with a reservation), as messages fit to show a user."""
        return [problem.message for problem in self._problems]

    @property
    def diagnostics(self) -> tuple[SkillProblem, ...]:
        """The same problems with their severity (``error``: not used; ``warning``: used, something ignored)."""
        return tuple(self._problems)

    @property
    def load_tool(self) -> LoadSkillTool:
        """The ``load_skill`` tool; add it to the session's tools next to the built-in ones."""
        return self._load_tool

    def metadata_block(self) -> str:
        """The "# Skills" section for the system instructions (empty when no skill is listed)."""
        return self._block.text

    def _discover(self, roots: Sequence[str | Path]) -> list[SkillManifest]:
        found: list[SkillManifest] = []
        seen: dict[str, SkillManifest] = {}
        for configured in roots:
            root = self._resolve_root(configured)
            if root is None:
                continue
            if not root.is_dir():
                state = "is not a directory" if root.exists() else "does not exist"
                self._problem("error", f"Skills root '{configured}' ({root}) {state}.")
                continue
            self._roots.append(root)
            try:
                directories = sorted((entry for entry in root.iterdir() if entry.is_dir()), key=lambda d: d.name)
            except OSError as exc:
                self._problem("error", f"Skills root '{configured}' ({root}) could not be listed: {exc.strerror}.")
                continue
            for directory in directories:
                skill_file = directory / SKILL_FILE_NAME
                if not skill_file.is_file():
                    continue  # a folder without SKILL.md is not a skill, and not an error
                skill = self._parse(directory, skill_file, root)
                if skill is None:
                    continue
                earlier = seen.get(skill.name)
                if earlier is not None:
                    self._problem(
                        "warning",
                        f"Skill '{skill.name}' under '{root}' is shadowed by the one under '{earlier.root}' "
                        "(the first root wins).",
                    )
                    continue
                seen[skill.name] = skill
                found.append(skill)
        return found

    def _resolve_root(self, configured: str | Path) -> Path | None:
        text = os.fspath(configured)
        if not text.strip():
            self._problem("error", "An empty skills root was ignored.")
            return None
        if text == "~" or text.startswith(("~/", "~\\")):
            home = self._home if self._home is not None else Path.home()
            path = home / text[2:]
        else:
            path = Path(text)
        if not path.is_absolute():
            path = self._cwd / path
        # normpath folds "." and ".." without resolving symbolic links: the root is shown as the user wrote it.
        return Path(os.path.normpath(path))

    def _parse(self, directory: Path, skill_file: Path, root: Path) -> SkillManifest | None:
        def reject(reason: str) -> None:
            self._problem("error", f"Skill '{directory.name}' was not loaded ({skill_file}): {reason}")

        try:
            content = read_limited_text(skill_file) or ""  # bounded, regular files only, never blocks
        except ConfigurationError as exc:
            reject(f"SKILL.md could not be read: {exc}.")
            return None
        split = split_front_matter(content)
        if split is None:
            reject("SKILL.md must start with YAML front matter: a '---' line, the fields, and a closing '---' line.")
            return None
        try:
            # BaseLoader keeps every scalar a string, as the specification's validator reads front matter:
            # `version: 1.0` under metadata is the text "1.0", not a float.
            fields = load_yaml(split.front_matter, strings_only=True)
        except yaml.YAMLError as exc:
            reject(f"Front matter is not valid YAML: {' '.join(str(exc).split())}")
            return None
        if not isinstance(fields, dict) or not all(isinstance(key, str) for key in fields):
            reject("Front matter must be a YAML mapping with text keys.")
            return None
        check = validate_front_matter(
            fields,
            directory=directory,
            skill_file=skill_file,
            root=root,
            accept_unknown_fields=self._accept_unknown_fields,
        )
        if check.manifest is None:
            reject(" ".join(check.errors))
            return None
        for warning in check.warnings:
            self._problem("warning", f"Skill '{check.manifest.name}' ({skill_file}): {warning}")
        return check.manifest

    def _problem(self, severity: Severity, message: str) -> None:
        self._problems.append(SkillProblem(severity=severity, message=message))
