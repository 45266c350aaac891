"""Property: on generated trees and .gitignore files, the walk leaves out exactly what `git check-ignore` says."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ironhive.adapters.tools.base import AllowAllReads
from ironhive.adapters.tools.globbing import Walk
from tests.support.components import GIT

_git = GIT.autouse()

NAMES = ("a", "b", "ab", ".d", "x.py")
SEGMENTS = ("a", "b", "ab", ".d", "x.py", "*", "?", "a*", "*b", "*.py", "[ab]", "[!a]", "**", ".*", "x.*")


@dataclass(frozen=True)
class Tree:
    """A generated work tree: its directories and files, and the lines of each directory's .gitignore."""

    directories: frozenset[str]
    files: frozenset[str]
    gitignores: dict[str, list[str]]
    exclude: list[str]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["pattern"] * 8 + ["comment", "blank", "spaces"]))
    if kind == "comment":
        return "#" + draw(st.sampled_from(NAMES))
    if kind == "blank":
        return ""
    body = "/".join(draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3)))
    if body == "**" and draw(st.booleans()):
        body = "**/" + draw(st.sampled_from(NAMES))
    text = ("!" if draw(st.booleans()) else "") + ("/" if draw(st.booleans()) else "") + body
    text += "/" if draw(st.booleans()) else ""
    return text + ("  " if kind == "spaces" else "")


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    paths = draw(st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(tuple), min_size=1, max_size=8))
    directories: set[str] = set()
    leaves: set[str] = set()
    for path in paths:
        for depth in range(1, len(path)):
            directories.add("/".join(path[:depth]))
        leaves.add("/".join(path))
    files = set()
    for leaf in sorted(leaves - directories):
        (files if draw(st.booleans()) else directories).add(leaf)
    holders = sorted({"", *directories})
    chosen = draw(st.lists(st.sampled_from(holders), max_size=3, unique=True))
    gitignores = {holder: draw(st.lists(patterns(), min_size=1, max_size=5)) for holder in chosen}
    exclude = draw(st.lists(patterns(), max_size=2))
    return Tree(frozenset(directories), frozenset(files), gitignores, exclude)


def _write(root: Path, tree: Tree) -> None:
    for directory in sorted(tree.directories):
        (root / directory).mkdir(parents=True, exist_ok=True)
    for file in tree.files:
        (root / file).write_text("x\n")
    for holder, lines in tree.gitignores.items():
        (root / holder / ".gitignore").write_text("\n".join(lines) + "\n")
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("\n".join(tree.exclude) + "\n")


def _git_ignored(root: Path, paths: list[str]) -> set[str]:
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "XDG_CONFIG_HOME": str(root / ".git"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    completed = subprocess.run(
        ["git", "check-ignore", "--no-index", "-z", "--stdin"],
        cwd=root,
        env=environment,
        input="\0".join(paths) + "\0",
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    return {path for path in completed.stdout.split("\0") if path}


def _init(root: Path) -> None:
    subprocess.run(
        ["git", "init", "-q", str(root)],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"},
        check=True,
    )


def _shown(base: str, root: str) -> set[str]:
    walk = Walk(base=base, shown=".", rules=AllowAllReads(), root=root)
    return {entry.relative for entry in walk.entries() if entry.name != ".gitignore"}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(), pick=st.integers(min_value=0))
@example(
    tree=Tree(frozenset({"a", "a/b"}), frozenset({"a/b/x.py", "a/ab", "b"}), {"": ["*", "!*/"]}, []),
    pick=0,
)
@example(
    tree=Tree(frozenset({"a", "a/b"}), frozenset({"a/b/x.py", "a/x.py"}), {"": ["*.py"], "a": ["!b/"]}, []),
    pick=0,
)
@example(tree=Tree(frozenset({"a", "a/b"}), frozenset({"a/b/ab", "ab"}), {"": ["a/**", "!a/b"]}, []), pick=0)
def test_the_walk_leaves_out_what_git_ignores(tree: Tree, pick: int) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(os.path.realpath(temporary))
        _init(root)
        _write(root, tree)
        every = sorted(tree.directories | tree.files)
        ignored = _git_ignored(root, every)
        # From the work tree's top, and from a directory below it that git does not ignore (the ignore files above
        # it apply as well).
        assert _shown(str(root), str(root)) == set(every) - ignored
        kept_directories = sorted(tree.directories - ignored)
        if kept_directories:
            below = kept_directories[pick % len(kept_directories)]
            expected = {
                path[len(below) + 1 :] for path in every if path.startswith(below + "/") and path not in ignored
            }
            assert _shown(str(root / below), str(root)) == expected
