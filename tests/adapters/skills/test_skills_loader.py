"""SkillsLoader on real directories: discovery, validation, roots, selection and the metadata block."""

from __future__ import annotations

from pathlib import Path

import pytest

from ironhive.adapters.config.schema import SkillsSection
from ironhive.adapters.skills.loader import SkillsLoader
from ironhive.domain.skills.catalog import METADATA_HEADER, dropped_notice


def write_skill(root: Path, directory: str, front_matter: str, body: str = "# Instructions\n\nDo it.\n") -> Path:
    folder = root / directory
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\n{front_matter}\n---\n{body}", encoding="utf-8")
    return folder


def valid(root: Path, name: str, description: str | None = None) -> Path:
    return write_skill(root, name, f"name: {name}\ndescription: {description or f'Use {name} for {name} work.'}")


def test_valid_skills_are_found_in_name_order_with_their_fields(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    valid(root, "zeta")
    write_skill(
        root,
        "alpha",
        "name: alpha\ndescription: Alpha things.\nlicense: MIT\ncompatibility: Needs git\n"
        "allowed-tools: Read Bash(git:*)\nmetadata:\n  author: me\n  version: 1.0",
    )
    (root / "not-a-skill").mkdir()
    (root / "loose-file.md").write_text("no")
    loader = SkillsLoader([root], cwd=tmp_path)
    assert loader.active
    assert loader.problems == []
    assert [skill.name for skill in loader.skills] == ["alpha", "zeta"]
    alpha = loader.skills[0]
    assert alpha.license == "MIT"
    assert alpha.compatibility == "Needs git"
    assert alpha.allowed_tools == ("Read", "Bash(git:*)")
    # Scalars stay text, as the specification's validator reads them: 1.0 is "1.0", not a float.
    assert alpha.metadata == {"author": "me", "version": "1.0"}
    assert alpha.directory == root / "alpha"
    assert alpha.root == root


@pytest.mark.parametrize(
    ("directory", "front_matter", "reason"),
    [
        ("Upper", "name: Upper\ndescription: d", "Skill name 'Upper' must be lowercase letters a-z"),
        ("-lead", "name: -lead\ndescription: d", "not starting or ending with a hyphen"),
        ("x" * 65, f"name: {'x' * 65}\ndescription: d", "is 65 characters long; the limit is 64."),
        ("folder", "name: other\ndescription: d", "Directory name 'folder' must match skill name 'other'."),
        ("long", f"name: long\ndescription: {'d' * 1025}", "Description is 1025 characters long; the limit is 1024."),
        ("extra", "name: extra\ndescription: d\nversion: 2", "Unexpected fields in front matter: version."),
        ("broken", "name: [unclosed\ndescription: d", "Front matter is not valid YAML"),
        ("listy", "- name\n- description", "Front matter must be a YAML mapping"),
    ],
)
def test_invalid_skills_are_not_loaded_and_are_reported(
    tmp_path: Path, directory: str, front_matter: str, reason: str
) -> None:
    valid(tmp_path, "good")
    write_skill(tmp_path, directory, front_matter)
    loader = SkillsLoader([tmp_path])
    assert [skill.name for skill in loader.skills] == ["good"]
    assert len(loader.problems) == 1
    problem = loader.problems[0]
    assert problem.startswith(f"Skill '{directory}' was not loaded ({tmp_path / directory / 'SKILL.md'}): ")
    assert reason in problem
    assert loader.diagnostics[0].severity == "error"


def test_a_skill_file_without_front_matter_is_reported(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "SKILL.md").write_text("# Just markdown\n")
    loader = SkillsLoader([tmp_path])
    assert loader.skills == ()
    assert "SKILL.md must start with YAML front matter" in loader.problems[0]


def test_unknown_fields_are_accepted_with_a_warning_when_configured(tmp_path: Path) -> None:
    write_skill(tmp_path, "extra", "name: extra\ndescription: d\nversion: 2\nuser-invocable: true")
    loader = SkillsLoader([tmp_path], accept_unknown_fields=True)
    assert [skill.name for skill in loader.skills] == ["extra"]
    assert loader.diagnostics[0].severity == "warning"
    skill_file = tmp_path / "extra" / "SKILL.md"
    assert loader.problems[0].startswith(
        f"Skill 'extra' ({skill_file}): Unexpected fields in front matter: user-invocable, version."
    )


def test_the_first_root_wins_and_the_shadowed_skill_is_reported(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    valid(first, "shared", "From the first root.")
    valid(second, "shared", "From the second root.")
    valid(second, "only-second")
    loader = SkillsLoader([first, second])
    assert [(skill.name, skill.description) for skill in loader.skills] == [
        ("shared", "From the first root."),
        ("only-second", "Use only-second for only-second work."),
    ]
    assert loader.problems == [
        f"Skill 'shared' under '{second}' is shadowed by the one under '{first}' (the first root wins)."
    ]


def test_relative_roots_resolve_against_cwd_and_tilde_against_home(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    valid(home / ".ironhive" / "skills", "global-skill")
    valid(cwd / ".ironhive" / "skills", "project-skill")
    loader = SkillsLoader(["~/.ironhive/skills", ".ironhive/skills"], home=home, cwd=cwd)
    assert loader.roots == (home / ".ironhive" / "skills", cwd / ".ironhive" / "skills")
    assert [skill.name for skill in loader.skills] == ["global-skill", "project-skill"]


def test_missing_roots_are_reported_and_no_existing_root_means_off(tmp_path: Path) -> None:
    loader = SkillsLoader(["nowhere", "~/absent"], home=tmp_path / "home", cwd=tmp_path)
    assert not loader.active
    assert loader.skills == ()
    assert loader.metadata_block() == ""
    assert loader.problems == [
        f"Skills root 'nowhere' ({tmp_path / 'nowhere'}) does not exist.",
        f"Skills root '~/absent' ({tmp_path / 'home' / 'absent'}) does not exist.",
    ]
    assert not SkillsLoader([]).active
    (tmp_path / "file").write_text("x")
    assert SkillsLoader(["file", ""], cwd=tmp_path).problems == [
        f"Skills root 'file' ({tmp_path / 'file'}) is not a directory.",
        "An empty skills root was ignored.",
    ]


def test_an_existing_empty_root_is_active(tmp_path: Path) -> None:
    loader = SkillsLoader([tmp_path])
    assert loader.active
    assert loader.skills == ()
    assert loader.metadata_block() == ""


def test_enabled_restricts_and_orders_and_exclude_removes(tmp_path: Path) -> None:
    for name in ("alpha", "beta", "gamma"):
        valid(tmp_path, name)
    loader = SkillsLoader([tmp_path], enabled=["gamma", "typo", "alpha", "beta"], exclude=["beta"])
    assert [skill.name for skill in loader.skills] == ["gamma", "alpha"]
    assert loader.problems == [
        "Enabled skill 'typo' was not found under any root (or it did not validate; see the other problems)."
    ]


def test_metadata_block_lists_names_and_descriptions(tmp_path: Path) -> None:
    valid(tmp_path, "alpha", "Alpha work.")
    valid(tmp_path, "beta", "Beta work.")
    block = SkillsLoader([tmp_path]).metadata_block()
    assert block == METADATA_HEADER + "- **alpha**: Alpha work.\n- **beta**: Beta work.\n"


def test_metadata_budget_drops_skills_with_a_notice_but_load_skill_knows_them(tmp_path: Path) -> None:
    valid(tmp_path, "alpha", "a" * 100)
    valid(tmp_path, "beta", "b" * 100)
    budget = len(METADATA_HEADER) + len(dropped_notice(2)) + 120
    loader = SkillsLoader([tmp_path], max_metadata_characters=budget)
    block = loader.metadata_block()
    assert "- **alpha**:" in block
    assert "**beta**" not in block
    assert block.endswith(
        "\n(1 more skill(s) are available but not listed here; `load_skill` still accepts their names.)\n"
    )
    assert len(block) <= budget
    assert [skill.name for skill in loader.dropped] == ["beta"]
    assert [skill.name for skill in loader.skills] == ["alpha", "beta"]
    assert loader.problems == [
        f"1 skill(s) did not fit maxMetadataCharacters ({budget}) and are not listed in the instructions: beta. "
        "load_skill still accepts their names."
    ]


def test_from_section_uses_every_key(tmp_path: Path) -> None:
    valid(tmp_path / "root", "alpha")
    valid(tmp_path / "root", "beta")
    write_skill(tmp_path / "root", "gamma", "name: gamma\ndescription: d\nextra: 1")
    section = SkillsSection.model_validate(
        {"roots": ["root"], "enabled": ["gamma", "alpha", "beta"], "exclude": ["beta"], "acceptUnknownFields": True}
    )
    loader = SkillsLoader.from_section(section, cwd=tmp_path)
    assert [skill.name for skill in loader.skills] == ["gamma", "alpha"]
    assert SkillsLoader.from_section(SkillsSection(), cwd=tmp_path).active is False
