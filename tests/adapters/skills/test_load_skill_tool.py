"""The load_skill tool: a skill's body, files inside its directory, and refusals for everything outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ironhive.adapters.skills.loader import SkillsLoader
from ironhive.adapters.skills.tool import LoadSkillTool
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.ports.tools import Tool

SKILL_MD = """---
name: pdf-tools
description: Work with PDF files.
---

# PDF tools

Run `scripts/extract.py` and read references/REFERENCE.md.
"""


@pytest.fixture
def tool(tmp_path: Path) -> LoadSkillTool:
    skill = tmp_path / "skills" / "pdf-tools"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (skill / "references" / "REFERENCE.md").write_text("Reference text.\n", encoding="utf-8")
    (skill / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tmp_path / "secret.txt").write_text("top secret\n", encoding="utf-8")
    other = tmp_path / "skills" / "other"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: other\ndescription: Other.\n---\nOther body.\n", encoding="utf-8")
    return SkillsLoader([tmp_path / "skills"]).load_tool


def test_the_tool_has_the_load_skill_spec(tool: LoadSkillTool) -> None:
    assert isinstance(tool, Tool)
    assert tool.spec.name == "load_skill"
    assert tool.spec.parameters["required"] == ["name"]
    assert set(tool.spec.parameters["properties"]) == {"name", "path"}  # type: ignore[arg-type]


async def test_name_alone_returns_the_body_without_front_matter(tool: LoadSkillTool) -> None:
    assert await tool.invoke({"name": "pdf-tools"}) == (
        "# PDF tools\n\nRun `scripts/extract.py` and read references/REFERENCE.md."
    )
    assert await tool.invoke({"name": "pdf-tools", "path": ""}) == await tool.invoke({"name": "pdf-tools"})


async def test_a_path_inside_the_skill_returns_that_file(tool: LoadSkillTool) -> None:
    assert await tool.invoke({"name": "pdf-tools", "path": "references/REFERENCE.md"}) == "Reference text.\n"
    assert await tool.invoke({"name": "pdf-tools", "path": "./references/../references/REFERENCE.md"}) == (
        "Reference text.\n"
    )


async def test_unknown_names_list_the_available_skills(tool: LoadSkillTool) -> None:
    with pytest.raises(ToolError) as raised:
        await tool.invoke({"name": "nope"})
    assert str(raised.value) == "No skill named 'nope'. Available: other, pdf-tools."


async def test_no_skills_at_all(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^No skill named 'x': no skills are available in this session\.$"):
        await LoadSkillTool([]).invoke({"name": "x"})


@pytest.mark.parametrize("path", ["../../secret.txt", "../other/SKILL.md", "references/../../../secret.txt"])
async def test_a_dot_dot_path_leaving_the_skill_is_refused(tool: LoadSkillTool, path: str) -> None:
    with pytest.raises(ToolError) as raised:
        await tool.invoke({"name": "pdf-tools", "path": path})
    assert str(raised.value) == (
        f"Refused: '{path}' is outside the skill 'pdf-tools' and cannot be read through it. "
        "Paths are relative to the skill's directory (for example references/REFERENCE.md)."
    )


async def test_an_absolute_path_is_refused_even_inside_the_skill(tool: LoadSkillTool, tmp_path: Path) -> None:
    for path in (str(tmp_path / "secret.txt"), str(tmp_path / "skills" / "pdf-tools" / "SKILL.md"), "/etc/passwd"):
        with pytest.raises(ToolError, match=r"^Refused: .* is outside the skill 'pdf-tools'"):
            await tool.invoke({"name": "pdf-tools", "path": path})


async def test_a_symlink_resolving_outside_the_skill_is_refused(tool: LoadSkillTool, tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "pdf-tools"
    os.symlink(tmp_path / "secret.txt", skill / "leak.txt")
    os.symlink(tmp_path, skill / "escape")
    os.symlink(skill / "references" / "REFERENCE.md", skill / "alias.md")
    for path in ("leak.txt", "escape/secret.txt"):
        with pytest.raises(ToolError, match=r"^Refused: "):
            await tool.invoke({"name": "pdf-tools", "path": path})
    # A link that stays inside the skill is an ordinary file of it.
    assert await tool.invoke({"name": "pdf-tools", "path": "alias.md"}) == "Reference text.\n"


async def test_missing_files_directories_and_binaries_are_errors(tool: LoadSkillTool) -> None:
    with pytest.raises(ToolError, match=r"^The skill 'pdf-tools' has no file 'references/MISSING\.md'\.$"):
        await tool.invoke({"name": "pdf-tools", "path": "references/MISSING.md"})
    with pytest.raises(ToolError, match=r"is a directory; name a file inside it: REFERENCE\.md$"):
        await tool.invoke({"name": "pdf-tools", "path": "references"})
    with pytest.raises(ToolError, match=r"^'logo\.png' in the skill 'pdf-tools' is not a text file\.$"):
        await tool.invoke({"name": "pdf-tools", "path": "logo.png"})


async def test_name_is_required(tool: LoadSkillTool) -> None:
    with pytest.raises(ToolArgumentError, match="Missing required parameter 'name'"):
        await tool.invoke({"path": "SKILL.md"})
