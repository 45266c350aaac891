"""list_directory, glob_files and grep_files, and the glob translation they share."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ironhive.adapters.tools.base import human_size
from ironhive.adapters.tools.globbing import compile_glob
from ironhive.adapters.tools.search import GlobFilesTool, GrepFilesTool, ListDirectoryTool
from ironhive.domain.errors import ToolError

IGNORED_ONE = (
    "(1 entries ignored by .gitignore, .ignore or the built-in list (.git, node_modules, virtualenvs, __pycache__) "
    "left out; include_ignored=true includes them)"
)


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (1229, "1.2 KB"),
        (1024 * 1024 - 1, "1.0 MB"),
        (5 * 1024 * 1024, "5.0 MB"),
        (3 << 30, "3.0 GB"),
    ],
)
def test_human_size(size: int, shown: str) -> None:
    assert human_size(size) == shown


# --- list_directory ----------------------------------------------------------------------------------------------


async def test_list_directory_shows_directories_then_files_sorted_with_sizes(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.txt": "x" * 1229, "a.txt": "hi", "src/main.py": "", "docs/x.md": "", ".git/HEAD": "ref"})
    result = await ListDirectoryTool(tmp_path).invoke({})
    assert result.splitlines() == [
        "[DIR]  docs/",
        "[DIR]  src/",
        "[FILE] a.txt (2 B)",
        "[FILE] b.txt (1.2 KB)",
        IGNORED_ONE,
    ]


async def test_list_directory_recursive_shows_relative_paths_and_skips_git(tmp_path: Path) -> None:
    _tree(tmp_path, {"top.txt": "", "src/pkg/mod.py": "abc", ".git/objects/ab": "", "src/.git/config": ""})
    result = await ListDirectoryTool(tmp_path).invoke({"path": ".", "recursive": True})
    assert result.splitlines() == [
        "[DIR]  src/",
        "[DIR]  src/pkg/",
        "[FILE] src/pkg/mod.py (3 B)",
        "[FILE] top.txt (0 B)",
        IGNORED_ONE.replace("(1 ", "(2 "),
    ]


async def test_list_directory_of_a_subdirectory(tmp_path: Path) -> None:
    _tree(tmp_path, {"src/a.py": ""})
    assert await ListDirectoryTool(tmp_path).invoke({"path": "src"}) == "[FILE] a.py (0 B)"


async def test_list_directory_caps_each_kind_at_500(tmp_path: Path) -> None:
    for index in range(502):
        (tmp_path / f"f{index:04}.txt").touch()
    (tmp_path / "only_dir").mkdir()
    lines = (await ListDirectoryTool(tmp_path).invoke({})).splitlines()
    assert lines[0] == "[DIR]  only_dir/"
    assert sum(line.startswith("[FILE]") for line in lines) == 500
    assert lines[-2] == "[FILE] f0499.txt (0 B)"
    assert lines[-1] == "... (truncated: showing 1 of 1 directories and 500 of 502 files)"


async def test_list_directory_errors(tmp_path: Path) -> None:
    (tmp_path / "file.txt").touch()
    tool = ListDirectoryTool(tmp_path)
    with pytest.raises(ToolError, match=r"^Directory not found: nope$"):
        await tool.invoke({"path": "nope"})
    with pytest.raises(ToolError, match=r"^Not a directory: file.txt$"):
        await tool.invoke({"path": "file.txt"})


async def test_list_directory_empty(tmp_path: Path) -> None:
    assert await ListDirectoryTool(tmp_path).invoke({"path": "."}) == "Directory . is empty"


# --- glob --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "setup.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "setup.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "lib/a.py", False),
        ("src/*", "src/a/b.py", False),
        ("src/**", "src/a/b.py", True),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[ab].txt", "a.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("./docs/*.md", "docs/x.md", True),
        ("a+b(c).txt", "a+b(c).txt", True),
        ("**/*.{ts,tsx}", "src/app.tsx", True),
        ("**/*.{ts,tsx}", "src/app.js", False),
        ("*", ".hidden", True),
        ("src/**", "src", False),
        ("A.txt", "a.txt", False),
        ("[^ab].txt", "a.txt", False),
        ("**/**/x", "x", True),
    ],
)
def test_compile_glob(pattern: str, path: str, matches: bool) -> None:
    assert compile_glob(pattern).matches(path) is matches


@pytest.mark.parametrize(
    ("pattern", "message"),
    [("/etc/*", "absolute"), ("../*", "climbs out"), ("", "empty"), ("{a,b}" * 12, "too many patterns")],
)
def test_compile_glob_refuses(pattern: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        compile_glob(pattern)


async def test_glob_files_finds_files_recursively_sorted(tmp_path: Path) -> None:
    _tree(tmp_path, {"z.py": "", "src/b.py": "", "src/a.py": "", "src/notes.md": "", ".git/hooks/x.py": ""})
    (tmp_path / "dir.py").mkdir()
    result = await GlobFilesTool(tmp_path).invoke({"pattern": "**/*.py"})
    assert result.splitlines() == [
        "Found 3 files matching '**/*.py':",
        "src/a.py",
        "src/b.py",
        "z.py",
        IGNORED_ONE.replace("entries", "files or directories"),
    ]


async def test_glob_files_relative_to_the_given_path(tmp_path: Path) -> None:
    _tree(tmp_path, {"src/pkg/a.py": "", "other/b.py": ""})
    result = await GlobFilesTool(tmp_path).invoke({"pattern": "**/*.py", "path": "src"})
    assert result.splitlines() == ["Found 1 files matching '**/*.py':", "pkg/a.py"]


async def test_glob_files_caps_at_100(tmp_path: Path) -> None:
    for index in range(105):
        (tmp_path / f"f{index:03}.txt").touch()
    lines = (await GlobFilesTool(tmp_path).invoke({"pattern": "*.txt"})).splitlines()
    assert lines[0] == "Found 105 files matching '*.txt':"
    assert lines[1:101] == [f"f{index:03}.txt" for index in range(100)]
    assert lines[101] == "... (5 more not shown; narrow the pattern)"
    assert len(lines) == 102


async def test_glob_files_no_match_and_missing_directory(tmp_path: Path) -> None:
    tool = GlobFilesTool(tmp_path)
    assert await tool.invoke({"pattern": "*.rs"}) == "No files found matching '*.rs'"
    with pytest.raises(ToolError, match=r"^Directory not found: nope$"):
        await tool.invoke({"pattern": "*", "path": "nope"})


# --- grep --------------------------------------------------------------------------------------------------------


async def test_grep_files_reports_path_line_and_text_case_insensitively(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "import os\nTODO: fix\n", "sub/b.txt": "nothing\nsecond todo here\n"})
    result = await GrepFilesTool(tmp_path).invoke({"pattern": "todo"})
    assert result.splitlines() == [
        "Found 2 matches in 2 files:",
        "a.py:2: TODO: fix",
        "sub/b.txt:2: second todo here",
    ]


async def test_grep_files_uses_regular_expressions(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "def alpha():\nclass Beta:\ndef gamma():\n"})
    result = await GrepFilesTool(tmp_path).invoke({"pattern": r"^def \w+\("})
    assert result.splitlines()[1:] == ["a.py:1: def alpha():", "a.py:3: def gamma():"]


async def test_grep_files_invalid_regex_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^Invalid regular expression '\(unclosed': "):
        await GrepFilesTool(tmp_path).invoke({"pattern": "(unclosed"})


async def test_grep_files_file_pattern_without_slash_matches_names_at_any_depth(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "hit\n", "deep/er/b.py": "hit\n", "c.txt": "hit\n"})
    result = await GrepFilesTool(tmp_path).invoke({"pattern": "hit", "file_pattern": "*.py"})
    assert result.splitlines()[1:] == ["a.py:1: hit", "deep/er/b.py:1: hit"]
    scoped = await GrepFilesTool(tmp_path).invoke({"pattern": "hit", "file_pattern": "deep/**/*.py"})
    assert scoped.splitlines()[1:] == ["deep/er/b.py:1: hit"]


async def test_grep_files_skips_binary_files_and_git(tmp_path: Path) -> None:
    _tree(tmp_path, {"blob.bin": b"needle\x00\x01", ".git/config": "needle\n", "ok.txt": "needle\n"})
    result = await GrepFilesTool(tmp_path).invoke({"pattern": "needle"})
    assert result.splitlines() == [
        "Found 1 matches in 1 files:",
        "ok.txt:1: needle",
        IGNORED_ONE.replace("entries", "files"),
    ]


async def test_grep_files_cuts_long_lines(tmp_path: Path) -> None:
    _tree(tmp_path, {"long.txt": "needle" + "y" * 500 + "\n"})
    line = (await GrepFilesTool(tmp_path).invoke({"pattern": "needle"})).splitlines()[1]
    assert line == "long.txt:1: " + ("needle" + "y" * 194) + "..."


async def test_grep_files_stops_at_100_matches(tmp_path: Path) -> None:
    _tree(tmp_path, {"many.txt": "hit\n" * 150})
    lines = (await GrepFilesTool(tmp_path).invoke({"pattern": "hit"})).splitlines()
    assert lines[0] == "Found 100 matches in 1 files:"
    assert lines[100] == "many.txt:100: hit"
    assert lines[-1].startswith("[Stopped at 100 matches; there are more.")


async def test_grep_files_exactly_100_matches_is_not_reported_as_capped(tmp_path: Path) -> None:
    _tree(tmp_path, {"many.txt": "hit\n" * 100})
    lines = (await GrepFilesTool(tmp_path).invoke({"pattern": "hit"})).splitlines()
    assert lines[-1] == "many.txt:100: hit"


async def test_grep_files_stops_at_50_files(tmp_path: Path) -> None:
    _tree(tmp_path, {f"f{index:02}.txt": "hit\n" for index in range(55)})
    lines = (await GrepFilesTool(tmp_path).invoke({"pattern": "hit"})).splitlines()
    assert lines[0] == "Found 50 matches in 50 files:"
    assert lines[50] == "f49.txt:1: hit"
    assert lines[-1].startswith("[Stopped at 50 files; there are more.")


async def test_grep_files_in_a_single_file_and_no_match(tmp_path: Path) -> None:
    _tree(tmp_path, {"src/a.py": "alpha\n"})
    tool = GrepFilesTool(tmp_path)
    assert (await tool.invoke({"pattern": "alp", "path": "src/a.py"})).splitlines()[1] == "a.py:1: alpha"
    assert (
        await tool.invoke({"pattern": "zzz", "file_pattern": "*.py"}) == "No matches for 'zzz' in files matching '*.py'"
    )
    with pytest.raises(ToolError, match=r"^Directory not found: nope$"):
        await tool.invoke({"pattern": "x", "path": "nope"})


async def test_grep_files_does_not_block_on_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    _tree(tmp_path, {"z.txt": "hit\n"})
    assert (await GrepFilesTool(tmp_path).invoke({"pattern": "hit"})).splitlines()[1] == "z.txt:1: hit"
