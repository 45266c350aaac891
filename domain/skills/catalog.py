"""Which discovered skills a session uses (``enabled``/``exclude``) and the metadata block listing them."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ironhive.domain.skills.manifest import LOAD_SKILL_TOOL_NAME, SkillManifest, SkillProblem

METADATA_HEADER = (
    "# Skills\n"
    "The skills below are available. Each entry is a skill's name and when to use it; only the name and description "
    f"are here. To use one, call `{LOAD_SKILL_TOOL_NAME}` with its name: that returns its full instructions. A file a "
    "skill refers to (for example references/REFERENCE.md) is read with the same tool and a `path`.\n\n"
)
"""The start of the metadata block: the header and the guidance on ``load_skill``."""

_LINE_BREAKS = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, kw_only=True, slots=True)
class MetadataBlock:
    """The skills section of the system instructions.

    Attributes:
        text: The section (empty when no skill is listed).
        listed: The skills named in it, in order.
        dropped: The skills that did not fit the character budget (``load_skill`` still knows them).
    """

    text: str
    listed: tuple[SkillManifest, ...]
    dropped: tuple[SkillManifest, ...]


def select_skills(
    found: Sequence[SkillManifest], *, enabled: Sequence[str] | None, exclude: Collection[str]
) -> tuple[tuple[SkillManifest, ...], tuple[SkillProblem, ...]]:
    """Apply ``enabled`` (restricts and orders) and ``exclude`` (removes) to the discovered skills.

    Args:
        found: The valid skills in discovery order (root order, then name).
        enabled: When set, only these names, in this order; a name matching nothing is reported.
        exclude: Names to leave out.

    Returns:
        The selected skills and the problems (enabled names not found).
    """
    by_name = {skill.name: skill for skill in found}
    problems: list[SkillProblem] = []
    if enabled is None:
        chosen = list(found)
    else:
        chosen = []
        for name in dict.fromkeys(enabled):
            skill = by_name.get(name)
            if skill is None:
                problems.append(
                    SkillProblem(
                        severity="error",
                        message=(
                            f"Enabled skill '{name}' was not found under any root "
                            "(or it did not validate; see the other problems)."
                        ),
                    )
                )
            else:
                chosen.append(skill)
    excluded = set(exclude)
    return tuple(skill for skill in chosen if skill.name not in excluded), tuple(problems)


def render_entry(skill: SkillManifest) -> str:
    """One line of the metadata block: ``- **<name>**: <description>`` (line breaks folded into spaces)."""
    return f"- **{skill.name}**: {_LINE_BREAKS.sub(' ', skill.description)}\n"


def dropped_notice(count: int) -> str:
    """The note closing the block when ``count`` skills did not fit (empty for none)."""
    if count == 0:
        return ""
    return (
        f"\n({count} more skill(s) are available but not listed here; "
        f"`{LOAD_SKILL_TOOL_NAME}` still accepts their names.)\n"
    )


def render_metadata_block(skills: Sequence[SkillManifest], max_characters: int) -> MetadataBlock:
    """List the skills within ``max_characters``: the header, one entry per skill, and a notice for the rest.

    Skills are taken in order while they fit; the first that does not fit and every one after it are dropped (the
    order is the user's priority, so a later, shorter entry does not jump the queue). Room for the notice is kept
    from the start, so the block never exceeds the budget.

    Args:
        skills: The selected skills, in order.
        max_characters: The budget of the whole block.

    Returns:
        The block, with what it listed and what it dropped. No listed skill → empty text.
    """
    used = len(METADATA_HEADER) + len(dropped_notice(len(skills)))
    listed: list[SkillManifest] = []
    for skill in skills:
        entry = len(render_entry(skill))
        if used + entry > max_characters:
            break
        used += entry
        listed.append(skill)
    dropped = tuple(skills[len(listed) :])
    if not listed:
        return MetadataBlock(text="", listed=(), dropped=dropped)
    text = METADATA_HEADER + "".join(render_entry(skill) for skill in listed) + dropped_notice(len(dropped))
    return MetadataBlock(text=text, listed=tuple(listed), dropped=dropped)
