"""Property: over generated trees of links and generated path spellings, no tool call the agent's gate lets through
reads, writes, lists or deletes anything outside the working directory (where the rules allow nothing)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.ports.chat import JsonValue
from tests.support.tool_pipeline import AgentTools

OUTSIDE_CONTENT = "OUTSIDE-CONTENT-5b1e"
OUTSIDE_ONLY_NAME = "outside-only-name-c7d2"
DENIED_CONTENT = "DENIED-CONTENT-0a9f"
ASKED_CONTENT = "ASKED-CONTENT-e3b8"
FORBIDDEN_OUTPUT = (OUTSIDE_CONTENT, OUTSIDE_ONLY_NAME, DENIED_CONTENT, ASKED_CONTENT)

LINK_PLACES = ("", "src")
LINK_NAMES = ("l1", "l2", "l3")
# Where a generated link points: inside directories and files, the root, its parent, the outside, the home directory.
LINK_TARGETS = (
    "src/a",
    "src/a/b",
    "@outside",
    "@home",
    "src",
    ".",
    "..",
    "src/a/f.txt",
    "@outside/secret.txt",
    "@missing",
)
SEGMENTS = ("..", ".", "", "src", "a", "b", "secrets", "outside", "home", *LINK_NAMES)
# The last segment, by tool: mostly the one that would leak if the path escaped.
FINALS = {
    "read_file": ("secret.txt", "secret.txt", "f.txt", "hard.txt", ".env", "db.txt"),
    "edit_file": ("secret.txt", "secret.txt", "f.txt", "hard.txt", ".env", "db.txt"),
    "delete_file": ("secret.txt", "secret.txt", "f.txt", "hard.txt", "db.txt", ""),
    "write_file": ("new.txt", "secret.txt", "f.txt", "hard.txt", ".env", "db.txt"),
    "walk": ("", "", "secret.txt", "b", "secrets", ".env"),
}
PREFIXES = ("", "", "./", "@root/", "@top/", "~/", "/")
TOOLS = ("read_file", "write_file", "edit_file", "delete_file", "list_directory", "grep_files", "glob_files")


@dataclass(frozen=True)
class Tree:
    links: tuple[tuple[str, str, str], ...]
    hard_link: bool


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    links = draw(
        st.lists(
            st.tuples(st.sampled_from(LINK_PLACES), st.sampled_from(LINK_NAMES), st.sampled_from(LINK_TARGETS)),
            min_size=2,
            max_size=6,
            unique_by=lambda link: (link[0], link[1]),
        )
    )
    return Tree(links=tuple(links), hard_link=draw(st.booleans()))


@st.composite
def paths(draw: st.DrawFn, tree: Tree, finals: tuple[str, ...]) -> str:
    """A path spelled from segments, half of the time through the tree's own links followed by ``..``."""
    final = draw(st.sampled_from(finals))
    if draw(st.booleans()):
        # A link, some "..", then another link: where the kernel and a textual ".." disagree.
        place, first, _ = draw(st.sampled_from(tree.links))
        _, second, _ = draw(
            st.sampled_from([link for link in tree.links if link[0] == place and link[1] != first] or [("", first, "")])
        )
        climb = "../" * draw(st.sampled_from([1, 1, 2]))
        return draw(st.sampled_from(["", "./", "@root/"])) + f"{place}/{first}/{climb}{second}/{final}".lstrip("/")
    segments = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5))
    return draw(st.sampled_from(PREFIXES)) + draw(st.sampled_from(["/", "//"])).join([*segments, final])


@st.composite
def calls(draw: st.DrawFn, tree: Tree) -> tuple[str, dict[str, JsonValue]]:
    name = draw(st.sampled_from(TOOLS))
    arguments: dict[str, JsonValue] = {"path": draw(paths(tree, FINALS.get(name, FINALS["walk"])))}
    if name == "write_file":
        arguments.update(content="WRITTEN", append=draw(st.booleans()))
    elif name == "edit_file":
        arguments.update(old_string=draw(st.sampled_from(["CONTENT", "CONTENT", "inside"])), new_string="EDITED")
    elif name == "list_directory":
        arguments["recursive"] = draw(st.booleans())
    elif name == "grep_files":
        arguments.update(pattern="CONTENT|inside|secret")
    elif name == "glob_files":
        arguments.update(pattern=draw(st.sampled_from(["**/*", "*", "*/*.txt"])))
    return name, arguments


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Tree, list[tuple[str, dict[str, JsonValue]]]]:
    tree = draw(trees())
    return tree, draw(st.lists(calls(tree), min_size=1, max_size=5))


def build(top: Path, tree: Tree) -> Path:
    root = top / "project"
    (root / "src" / "a" / "b").mkdir(parents=True)
    (root / "src" / "a" / "f.txt").write_text("inside\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "db.txt").write_text(DENIED_CONTENT)
    (root / ".env").write_text(ASKED_CONTENT)
    for directory in ("outside", "home"):
        (top / directory).mkdir()
        (top / directory / "secret.txt").write_text(OUTSIDE_CONTENT)
        (top / directory / OUTSIDE_ONLY_NAME).write_text(OUTSIDE_CONTENT)
    for place, name, target in tree.links:
        resolved = top / target[1:] if target.startswith("@") else root / target
        os.symlink(resolved, root / place / name)
    if tree.hard_link:
        os.link(top / "outside" / "secret.txt", root / "src" / "hard.txt")
    return root


def outside_snapshot(top: Path) -> dict[str, str]:
    """Every name and file content outside the project, read without following links."""
    seen: dict[str, str] = {}
    for directory, subdirectories, files in os.walk(top):
        if Path(directory) == top:
            subdirectories.remove("project")
        for name in files:
            path = Path(directory, name)
            seen[str(path)] = os.readlink(path) if path.is_symlink() else path.read_text()
        seen.update({str(Path(directory, name)): "<dir>" for name in subdirectories})
    return seen


@contextmanager
def generated_top() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        top = Path(name).resolve()
        with mock.patch.dict(os.environ, {"HOME": str(top / "home")}):
            yield top


def spell(path: str, top: Path) -> str:
    return path.replace("@root", str(top / "project")).replace("@top", str(top))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_no_call_touches_the_outside(scenario: tuple[Tree, list[tuple[str, dict[str, JsonValue]]]]) -> None:
    tree, script = scenario
    with generated_top() as top:
        root = build(top, tree)
        before = outside_snapshot(top)
        tools = AgentTools(root)

        async def run() -> None:
            for name, arguments in script:
                spelled = {key: spell(value, top) if key == "path" else value for key, value in arguments.items()}
                assert isinstance(spelled["path"], str)
                outcome = await tools.call(name, spelled)
                shown = outcome.result.replace(spelled["path"], "<path>")  # an error may echo the path as given
                leaked = [marker for marker in FORBIDDEN_OUTPUT if marker in shown]
                assert not leaked, (name, spelled, outcome.result)
                assert outside_snapshot(top) == before, (name, spelled, outcome.result)

        asyncio.run(run())
