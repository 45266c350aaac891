"""The file and search tools behind the agent's gate: the issue's escape corpus, links swapped in after judging, hard
links, and walking tools that judge every entry by the read rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ironhive.adapters.tools.safe_open import LinkAppearedError, open_directory, open_file
from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolOutcome
from tests.support.tool_pipeline import AgentTools

SENTINEL = "OUTSIDE-SENTINEL-7f3a"
DENIED = "DENIED-SECRET-91c2"
ASKED = "ENV-SECRET-44d0"


@pytest.fixture
def top(tmp_path: Path) -> Path:
    """``project/`` with the issue's links (``src/s -> src/a/b``, ``src/out -> outside/``), beside ``outside/``."""
    root = tmp_path / "project"
    (root / "src" / "a" / "b").mkdir(parents=True)
    (root / "secrets").mkdir()
    (root / "secrets" / "db.txt").write_text(DENIED)
    (root / ".env").write_text(ASKED)
    (root / "src" / "code.py").write_text("print('inside')\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SENTINEL)
    os.symlink(root / "src" / "a" / "b", root / "src" / "s")
    os.symlink(outside, root / "src" / "out")
    os.symlink(outside / "secret.txt", root / "src" / "linked.txt")
    return tmp_path


def outside_state(top: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((top / "outside").iterdir())}


ESCAPES = [
    ("read_file", {"path": "src/s/../out/secret.txt"}),
    ("write_file", {"path": "src/s/../out/pwned.txt", "content": "pwned"}),
    ("write_file", {"path": "src/s/../out/secret.txt", "content": "pwned"}),
    ("edit_file", {"path": "src/s/../out/secret.txt", "old_string": "OUTSIDE", "new_string": "pwned"}),
    ("delete_file", {"path": "src/s/../out/secret.txt"}),
    ("list_directory", {"path": "src/s/../out"}),
    ("grep_files", {"pattern": "SENTINEL", "path": "src/s/../out"}),
    ("glob_files", {"pattern": "*", "path": "src/s/../out"}),
    ("read_file", {"path": "src/out/secret.txt"}),
    ("read_file", {"path": "src/linked.txt"}),
    ("grep_files", {"pattern": "SENTINEL|SECRET"}),
    ("grep_files", {"pattern": "SENTINEL", "path": "src/linked.txt"}),
    ("list_directory", {"path": "src/out"}),
]


@pytest.mark.parametrize(("name", "arguments"), ESCAPES, ids=lambda value: str(value)[:40])
async def test_the_issue_corpus_never_reaches_the_outside(top: Path, name: str, arguments: dict[str, str]) -> None:
    before = outside_state(top)
    outcome = await AgentTools(top / "project").call(name, arguments)
    assert SENTINEL not in outcome.result
    assert DENIED not in outcome.result and ASKED not in outcome.result
    assert outside_state(top) == before


async def test_dot_dot_after_a_symlinked_directory_acts_where_it_was_judged(top: Path) -> None:
    tools = AgentTools(top / "project")
    outcome = await tools.call("write_file", {"path": "src/s/../out/new.txt", "content": "here"})
    assert outcome.success, outcome.result
    # src/s is src/a/b, so ".." is src/a: the file lands in src/a/out, the place the rules judged.
    assert (top / "project" / "src" / "a" / "out" / "new.txt").read_text() == "here"
    assert not (top / "outside" / "new.txt").exists()
    read = await tools.call("read_file", {"path": "src/s/../out/new.txt"})
    assert read.result == "here"


async def test_grep_of_the_project_prints_no_asked_denied_or_linked_content(top: Path) -> None:
    outcome = await AgentTools(top / "project").call("grep_files", {"pattern": "SENTINEL|SECRET|inside"})
    assert outcome.success
    lines = outcome.result.splitlines()
    assert lines[:2] == ["Found 1 matches in 1 files:", "src/code.py:1: print('inside')"]
    # .env (asked), secrets/ (denied), src/out and src/linked.txt (links to the outside) are counted, never printed.
    assert lines[2] == "(4 files not shown: the read permission rules do not allow them without asking)"


async def test_listing_and_glob_show_only_what_the_read_rules_allow(top: Path) -> None:
    tools = AgentTools(top / "project")
    listing = await tools.call("list_directory", {"path": ".", "recursive": True})
    assert listing.result.splitlines() == [
        "[DIR]  src/",
        "[DIR]  src/a/",
        "[DIR]  src/a/b/",
        "[DIR]  src/s/",
        "[FILE] src/code.py (16 B)",
        "(4 entries not shown: the read permission rules do not allow them without asking)",
    ]
    found = await tools.call("glob_files", {"pattern": "**/*"})
    assert found.result.splitlines()[:2] == ["Found 1 files matching '**/*':", "src/code.py"]


async def test_a_denied_file_named_directly_is_not_searched(top: Path) -> None:
    outcome = await AgentTools(top / "project").call("grep_files", {"pattern": "x", "path": ".env"})
    assert ASKED not in outcome.result


# --- a link swapped in between judging and running ---------------------------------------------------------------


class SwapAfterJudging:
    """Runs after the gate: replaces ``src/a`` (a real directory when judged) with a link to the outside."""

    def __init__(self, root: Path, outside: Path) -> None:
        self._root = root
        self._outside = outside

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        directory = self._root / "src" / "a"
        directory.rename(self._root / "src" / "a-moved")
        os.symlink(self._outside, directory)
        return await next_step(invocation)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"path": "src/a/secret.txt"}),
        ("write_file", {"path": "src/a/secret.txt", "content": "pwned"}),
        ("edit_file", {"path": "src/a/secret.txt", "old_string": "inside", "new_string": "pwned"}),
        ("delete_file", {"path": "src/a/secret.txt"}),
        ("list_directory", {"path": "src/a"}),
        ("grep_files", {"pattern": "SENTINEL", "path": "src/a"}),
        ("glob_files", {"pattern": "*", "path": "src/a"}),
    ],
    ids=lambda value: str(value)[:30],
)
async def test_a_link_swapped_in_after_judging_is_not_followed(top: Path, name: str, arguments: dict[str, str]) -> None:
    root = top / "project"
    (root / "src" / "a" / "secret.txt").write_text("inside")
    before = outside_state(top)
    tools = AgentTools(root, inner=(SwapAfterJudging(root, top / "outside"),))
    outcome = await tools.call(name, arguments)
    assert outcome.success is False
    assert outcome.result.startswith("'src/a")
    assert "changed after it was judged: a symbolic link now stands on the way" in outcome.result
    assert SENTINEL not in outcome.result
    assert outside_state(top) == before


# --- hard links ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_file", {"path": "src/hard.txt", "content": "pwned"}),
        ("write_file", {"path": "src/hard.txt", "content": "pwned", "append": True}),
        ("edit_file", {"path": "src/hard.txt", "old_string": "OUTSIDE", "new_string": "pwned"}),
        ("delete_file", {"path": "src/hard.txt"}),
    ],
    ids=lambda value: str(value)[:30],
)
async def test_a_hard_linked_file_is_never_changed_even_when_approved(
    top: Path, name: str, arguments: dict[str, str]
) -> None:
    root = top / "project"
    os.link(top / "outside" / "secret.txt", root / "src" / "hard.txt")
    tools = AgentTools(root, approve=True)
    outcome = await tools.call(name, arguments)
    assert [request.reason for request in tools.approver.requests] != []  # judged as outside, so asked
    assert outcome.success is False
    assert "it is a hard link (one of 2 names of the same file)" in outcome.result
    assert (top / "outside" / "secret.txt").read_text() == SENTINEL
    assert (root / "src" / "hard.txt").exists()


async def test_reading_a_hard_linked_file_is_asked_as_outside(top: Path) -> None:
    root = top / "project"
    os.link(top / "outside" / "secret.txt", root / "src" / "hard.txt")
    rejected = AgentTools(root)
    outcome = await rejected.call("read_file", {"path": "src/hard.txt"})
    assert outcome.result.startswith("Approval rejected: ")
    assert "outside the working directory" in rejected.approver.requests[0].reason
    for walking in (("grep_files", {"pattern": "SENTINEL"}), ("glob_files", {"pattern": "src/*.txt"})):
        assert "hard.txt" not in (await rejected.call(*walking)).result
    approved = await AgentTools(root, approve=True).call("read_file", {"path": "src/hard.txt"})
    assert approved.result == SENTINEL  # the human saw "outside the working directory" and said yes


class LinkAfterJudging:
    """Runs after the gate: gives ``src/code.py`` a second name outside the project."""

    def __init__(self, root: Path, outside: Path) -> None:
        self._root = root
        self._outside = outside

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        os.link(self._root / "src" / "code.py", self._outside / "other-name.py")
        return await next_step(invocation)


async def test_a_file_that_gains_a_hard_link_after_judging_is_not_read(top: Path) -> None:
    root = top / "project"
    tools = AgentTools(root, inner=(LinkAfterJudging(root, top / "outside"),))
    outcome = await tools.call("read_file", {"path": "src/code.py"})
    assert outcome.success is False
    assert outcome.result.startswith("Refusing to read 'src/code.py': it is a hard link")


# --- the opener itself ---------------------------------------------------------------------------------------------


def test_open_file_refuses_a_link_anywhere_on_the_way(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    os.symlink(tmp_path / "real", tmp_path / "dirlink")
    os.symlink(tmp_path / "real" / "f.txt", tmp_path / "filelink")
    with pytest.raises(LinkAppearedError, match=r"^'shown' changed after it was judged"):
        open_file(str(tmp_path / "dirlink" / "f.txt"), os.O_RDONLY, "shown")
    with pytest.raises(LinkAppearedError):
        open_file(str(tmp_path / "filelink"), os.O_RDONLY, "shown")
    with pytest.raises(LinkAppearedError):
        open_directory(str(tmp_path / "dirlink"), "shown")
    with pytest.raises(LinkAppearedError):
        open_file(str(tmp_path / "dirlink" / "new" / "f.txt"), os.O_WRONLY | os.O_CREAT, "shown", create_parents=True)
    assert not (tmp_path / "real" / "new").exists()
    descriptor = open_file(str(tmp_path / "real" / "f.txt"), os.O_RDONLY, "shown")
    try:
        assert os.read(descriptor, 10) == b"x"
    finally:
        os.close(descriptor)


def test_open_file_creates_missing_parents_and_reports_a_missing_file(tmp_path: Path) -> None:
    descriptor = open_file(str(tmp_path / "a" / "b" / "c.txt"), os.O_WRONLY | os.O_CREAT, "c", create_parents=True)
    os.close(descriptor)
    assert (tmp_path / "a" / "b" / "c.txt").is_file()
    with pytest.raises(FileNotFoundError) as info:
        open_file(str(tmp_path / "x" / "y.txt"), os.O_RDONLY, "y")
    assert info.value.filename == str(tmp_path / "x" / "y.txt")


async def test_a_delete_judges_the_name_it_removes_and_where_a_link_points(top: Path) -> None:
    root = top / "project"
    os.symlink(root / "src" / "code.py", top / "outside" / "inlink")  # outside/inlink -> an allowed inside file
    os.symlink(root / "src" / "code.py", root / "src" / "alias.py")
    tools = AgentTools(root)
    # The name removed would be outside/inlink: outside, so asked (and rejected), although it points inside.
    through_outside = await tools.call("delete_file", {"path": "src/out/inlink"})
    assert through_outside.result.startswith("Approval rejected: ")
    assert (top / "outside" / "inlink").is_symlink()
    # A link to the outside is judged by where it points too: asked, so nothing is removed.
    to_outside = await tools.call("delete_file", {"path": "src/linked.txt"})
    assert to_outside.result.startswith("Approval rejected: ")
    assert (root / "src" / "linked.txt").is_symlink()
    # A link inside to an inside file: the link goes, the file stays.
    inside = await tools.call("delete_file", {"path": "src/alias.py"})
    assert inside.success, inside.result
    assert not (root / "src" / "alias.py").is_symlink()
    assert (root / "src" / "code.py").read_text() == "print('inside')\n"


async def test_editing_a_missing_file_creates_no_directories(top: Path) -> None:
    outcome = await AgentTools(top / "project").call(
        "edit_file", {"path": "new/dir/x.txt", "old_string": "a", "new_string": "b"}
    )
    assert outcome.result.startswith("File not found: new/dir/x.txt")
    assert not (top / "project" / "new").exists()
