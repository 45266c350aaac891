"""Skill selection (enabled/exclude) and the metadata block within its character budget."""

from __future__ import annotations

from pathlib import Path

from ironhive.domain.skills.catalog import (
    METADATA_HEADER,
    dropped_notice,
    render_entry,
    render_metadata_block,
    select_skills,
)
from ironhive.domain.skills.manifest import SkillManifest


def skill(name: str, description: str = "Does things.") -> SkillManifest:
    directory = Path("/skills") / name
    return SkillManifest(
        name=name, description=description, directory=directory, skill_file=directory / "SKILL.md", root=Path("/skills")
    )


def names(skills: tuple[SkillManifest, ...]) -> list[str]:
    return [item.name for item in skills]


def test_without_enabled_every_skill_is_selected_in_discovery_order() -> None:
    selected, problems = select_skills([skill("b"), skill("a")], enabled=None, exclude=())
    assert names(selected) == ["b", "a"]
    assert problems == ()


def test_enabled_restricts_and_orders_and_reports_names_not_found() -> None:
    selected, problems = select_skills(
        [skill("a"), skill("b"), skill("c")], enabled=["c", "missing", "a", "c"], exclude=()
    )
    assert names(selected) == ["c", "a"]
    assert [problem.message for problem in problems] == [
        "Enabled skill 'missing' was not found under any root (or it did not validate; see the other problems)."
    ]


def test_exclude_removes_even_enabled_skills() -> None:
    selected, _ = select_skills([skill("a"), skill("b"), skill("c")], enabled=["a", "b"], exclude=["b"])
    assert names(selected) == ["a"]
    selected, _ = select_skills([skill("a"), skill("b")], enabled=None, exclude=["a"])
    assert names(selected) == ["b"]


def test_entry_folds_line_breaks() -> None:
    assert render_entry(skill("pdf", "Reads PDFs.\nUse for\r\nforms.")) == "- **pdf**: Reads PDFs. Use for forms.\n"


def test_block_lists_every_skill_when_the_budget_allows() -> None:
    block = render_metadata_block([skill("a", "First."), skill("b", "Second.")], 12000)
    assert block.text == METADATA_HEADER + "- **a**: First.\n- **b**: Second.\n"
    assert block.text.startswith("# Skills\n")
    assert "`load_skill`" in block.text
    assert names(block.listed) == ["a", "b"]
    assert block.dropped == ()


def test_block_drops_what_does_not_fit_with_a_notice_and_stays_within_budget() -> None:
    skills = [skill("a", "x" * 40), skill("b", "y" * 40), skill("c", "z")]
    entry = len(render_entry(skills[0]))
    budget = len(METADATA_HEADER) + len(dropped_notice(3)) + entry + 5
    block = render_metadata_block(skills, budget)
    assert names(block.listed) == ["a"]
    # "c" would fit, but the order is the priority: everything after the first skill that does not fit is dropped.
    assert names(block.dropped) == ["b", "c"]
    assert block.text == (
        METADATA_HEADER
        + render_entry(skills[0])
        + "\n(2 more skill(s) are available but not listed here; `load_skill` still accepts their names.)\n"
    )
    assert len(block.text) <= budget


def test_block_is_empty_when_nothing_fits_or_nothing_is_selected() -> None:
    assert render_metadata_block([], 12000).text == ""
    block = render_metadata_block([skill("a")], 10)
    assert block.text == ""
    assert names(block.dropped) == ["a"]
