"""The walking tools leave out what .gitignore, .ignore and a built-in list ignore, count it, include it on request."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ironhive.adapters.tools.files import ReadFileTool
from ironhive.adapters.tools.ignore_files import parse_ignore_lines
from ironhive.adapters.tools.search import GlobFilesTool, GrepFilesTool, ListDirectoryTool
from ironhive.domain.permissions.rules import PermissionAction

NOTE = "ignored by .gitignore, .ignore or the built-in list (.git, node_modules, virtualenvs, __pycache__) left out"


def _tree(root: Path, files: dict[str, str]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def _listed(result: str) -> list[str]:
    return [line.split(" (")[0].split(maxsplit=1)[1] for line in result.splitlines() if line.startswith("[")]


async def _list(root: Path, **arguments: str | bool) -> list[str]:
    return _listed(await ListDirectoryTool(root).invoke({"recursive": True, **arguments}))


PROJECT = {
    ".gitignore": "*.log\nbuild/\n!keep.log\n/top-only.txt\n",
    "a.log": "",
    "keep.log": "",
    "top-only.txt": "",
    "build/out.txt": "",
    "src/.gitignore": "!debug.log\ngen\n",
    "src/debug.log": "",
    "src/other.log": "",
    "src/top-only.txt": "",
    "src/gen/x.py": "",
    "src/build": "a file, not a directory: build/ does not match it",
    "src/main.py": "",
}


async def test_nested_gitignore_files_negation_anchoring_and_directory_only_patterns(tmp_path: Path) -> None:
    _tree(tmp_path, PROJECT)
    assert await _list(tmp_path) == [
        "src/",
        ".gitignore",
        "keep.log",
        "src/.gitignore",
        "src/build",
        "src/debug.log",
        "src/main.py",
        "src/top-only.txt",
    ]


async def test_include_ignored_lists_everything(tmp_path: Path) -> None:
    _tree(tmp_path, PROJECT)
    listed = await _list(tmp_path, include_ignored=True)
    assert {"a.log", "top-only.txt", "build/", "build/out.txt", "src/other.log", "src/gen/", "src/gen/x.py"} <= set(
        listed
    )
    assert len(listed) == len(PROJECT) + 3  # and the directories build/, src/, src/gen/


async def test_an_ignore_file_outranks_the_gitignore_beside_it(tmp_path: Path) -> None:
    _tree(
        tmp_path, {".gitignore": "secret.txt\n", ".ignore": "!secret.txt\nnotes.md\n", "secret.txt": "", "notes.md": ""}
    )
    assert await _list(tmp_path) == [".gitignore", ".ignore", "secret.txt"]


async def test_the_built_in_list_and_virtualenvs_are_ignored_without_any_ignore_file(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "app.py": "# TODO: ship\n",
            "node_modules/pkg/index.js": "// TODO: upstream\n",
            ".venv/lib/site.py": "# TODO\n",
            "venv/lib/site.py": "# TODO\n",
            "env/pyvenv.cfg": "home = /usr\n",
            "env/lib/site.py": "# TODO\n",
            "__pycache__/app.txt": "TODO\n",
            ".git/COMMIT_EDITMSG": "TODO\n",
        },
    )
    result = await GrepFilesTool(tmp_path).invoke({"pattern": "TODO"})
    assert result.splitlines() == [
        "Found 1 matches in 1 files:",
        "app.py:1: # TODO: ship",
        f"(6 files {NOTE}; include_ignored=true includes them)",
    ]
    everything = await GrepFilesTool(tmp_path).invoke({"pattern": "TODO", "include_ignored": True})
    assert everything.splitlines()[0] == "Found 7 matches in 7 files:"
    assert "ignored" not in everything


async def test_glob_leaves_out_ignored_files_and_counts_them(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "dist/\n", "dist/a.js": "", "src/a.js": "", "node_modules/x/b.js": ""})
    result = await GlobFilesTool(tmp_path).invoke({"pattern": "**/*.js"})
    assert result.splitlines() == [
        "Found 1 files matching '**/*.js':",
        "src/a.js",
        f"(2 files or directories {NOTE}; include_ignored=true includes them)",
    ]
    everything = await GlobFilesTool(tmp_path).invoke({"pattern": "**/*.js", "include_ignored": True})
    assert everything.splitlines()[1:] == ["dist/a.js", "node_modules/x/b.js", "src/a.js"]


class _DenyNamesStartingWithSecret:
    def judge_read(self, path: str) -> PermissionAction:
        return PermissionAction.DENY if os.path.basename(path).startswith("secret") else PermissionAction.ALLOW


async def test_ignored_and_permission_hidden_entries_are_counted_apart(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.tmp\n", "a.tmp": "", "b.tmp": "", "secret.txt": "", "ok.txt": ""})
    tool = ListDirectoryTool(tmp_path, read_rules=_DenyNamesStartingWithSecret())
    assert (await tool.invoke({})).splitlines() == [
        "[FILE] .gitignore (6 B)",
        "[FILE] ok.txt (0 B)",
        f"(2 entries {NOTE}; include_ignored=true includes them)",
        "(1 entries not shown: the read permission rules do not allow them without asking)",
    ]
    # Included on request, an ignored entry is still judged by the read rules.
    assert (await tool.invoke({"include_ignored": True})).splitlines()[-1].startswith("(1 entries not shown")


async def test_an_ignore_file_the_read_rules_hide_is_not_read(tmp_path: Path) -> None:
    _tree(
        tmp_path, {"secret-dir/.gitignore": "*\n", "secret-dir/x.txt": "", "sub/.gitignore": "*.txt\n", "sub/y.txt": ""}
    )

    class DenyIgnoreFilesOfSecretDir:
        def judge_read(self, path: str) -> PermissionAction:
            return PermissionAction.DENY if path.endswith("secret-dir/.gitignore") else PermissionAction.ALLOW

    listed = _listed(
        await ListDirectoryTool(tmp_path, read_rules=DenyIgnoreFilesOfSecretDir()).invoke({"recursive": True})
    )
    assert listed == ["secret-dir/", "sub/", "secret-dir/x.txt", "sub/.gitignore"]


async def test_ignored_files_can_still_be_read_or_searched_by_name(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.log\nbuild/\n", "app.log": "error TODO\n", "build/gen.py": "TODO\n"})
    assert await ReadFileTool(tmp_path).invoke({"path": "app.log"}) == "error TODO\n"
    assert (await GrepFilesTool(tmp_path).invoke({"pattern": "TODO", "path": "app.log"})).splitlines()[1] == (
        "app.log:1: error TODO"
    )
    # A directory named explicitly is walked even though the ignore files above it ignore it.
    assert await _list(tmp_path, path="build") == ["gen.py"]


async def test_a_walk_below_the_top_applies_the_ignore_files_above_it(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".gitignore": "generated/\n/src/only-here.txt\n",
            "src/generated/a.py": "",
            "src/only-here.txt": "",
            "src/a.py": "",
        },
    )
    assert await _list(tmp_path, path="src") == ["a.py"]
    (tmp_path / ".git").mkdir()
    (tmp_path / "project").mkdir()
    os.rename(tmp_path / "src", tmp_path / "project" / "src")
    (tmp_path / ".gitignore").write_text("generated/\n")
    # The working directory is inside a git work tree: the top's ignore files apply, as git applies them.
    assert await _list(tmp_path / "project", path="src") == ["a.py", "only-here.txt"]


async def test_the_repository_exclude_file_counts_below_every_gitignore(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".git/info/exclude": "*.bak\nlocal/\n",
            ".gitignore": "!keep.bak\n",
            "a.bak": "",
            "keep.bak": "",
            "local/x": "",
        },
    )
    assert await _list(tmp_path) == [".gitignore", "keep.bak"]


async def test_a_symbolic_link_named_gitignore_is_not_followed(tmp_path: Path) -> None:
    _tree(tmp_path, {"elsewhere/rules": "*.txt\n", "project/a.txt": ""})
    (tmp_path / "project" / ".gitignore").symlink_to(tmp_path / "elsewhere" / "rules")
    assert "a.txt" in await _list(tmp_path / "project")


@pytest.mark.parametrize(
    ("line", "name", "directory", "ignored"),
    [
        ("# comment", "# comment", False, None),
        ("\\#hash", "#hash", False, True),
        ("\\!bang", "!bang", False, True),
        ("!bang", "bang", False, False),
        ("trailing   ", "trailing", False, True),
        ("space\\ ", "space ", False, True),
        ("dir/", "dir", False, None),
        ("dir/", "dir", True, True),
        ("*.PY", "a.py", False, None),
        ("[!a]b", "cb", False, True),
    ],
)
def test_pattern_lines(line: str, name: str, directory: bool, ignored: bool | None) -> None:
    patterns = parse_ignore_lines(line)
    matched = [pattern for pattern in patterns if pattern.matches(name, name, directory)]
    assert (not matched[-1].negated if matched else None) is ignored
