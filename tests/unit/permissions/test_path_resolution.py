"""One resolution per path: every spelling of a file resolves alike, hard links count as outside, and the resolution
the rules judged is the one handed to the tool of the same call (and to no other task)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ironhive.domain.permissions.paths import judged_path, resolve_path, resolve_root, resolve_target


@pytest.fixture
def tree(tmp_path: Path) -> tuple[str, Path]:
    """A project with ``src/s -> src/a/b`` and ``src/out -> <outside>``, the shape of the issue's escape."""
    root = tmp_path / "project"
    (root / "src" / "a" / "b").mkdir(parents=True)
    (root / "src" / "a" / "file.txt").write_text("inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(root / "src" / "a" / "b", root / "src" / "s")
    os.symlink(outside, root / "src" / "out")
    return resolve_root(root), outside


def test_dot_dot_after_a_symlinked_directory_is_applied_to_where_the_link_points(tree: tuple[str, Path]) -> None:
    root, _ = tree
    # The kernel resolves src/s first (to src/a/b), then "..": src/a/out, not the src/out link to the outside.
    resolved = resolve_path(root, "src/s/../out/secret.txt")
    assert resolved is not None
    assert resolved.full == os.path.join(root, "src", "a", "out", "secret.txt")
    assert resolved.external is False


@pytest.mark.parametrize(
    "spelling",
    ["src/a/file.txt", "./src/a/file.txt", "src//a/./file.txt", "src/a/b/../file.txt", "src/s/../file.txt"],
)
def test_every_spelling_of_one_file_resolves_to_one_path(tree: tuple[str, Path], spelling: str) -> None:
    root, _ = tree
    expected = os.path.join(root, "src", "a", "file.txt")
    relative = resolve_path(root, spelling)
    absolute = resolve_path(root, os.path.join(root, spelling))
    assert relative is not None and absolute is not None
    assert relative.full == absolute.full == expected
    assert resolve_target(root, spelling).match_path == "src/a/file.txt"


def test_a_link_to_the_outside_is_outside_and_a_tilde_is_the_home_directory(
    tree: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tree
    monkeypatch.setenv("HOME", str(outside))
    through_link = resolve_target(root, "src/out/secret.txt")
    assert through_link.external is True
    assert through_link.match_path == (outside / "secret.txt").resolve().as_posix()
    home = resolve_path(root, "~/secret.txt")
    assert home is not None and home.external is True
    assert home.full == str((outside / "secret.txt").resolve())


def test_a_hard_linked_file_counts_as_outside(tree: tuple[str, Path]) -> None:
    root, outside = tree
    os.link(outside / "secret.txt", Path(root) / "src" / "copy.txt")
    resolved = resolve_path(root, "src/copy.txt")
    assert resolved is not None and resolved.linked is True and resolved.external is True
    target = resolve_target(root, "src/copy.txt")
    assert target.external is True
    assert target.match_path == os.path.join(root, "src", "copy.txt")


def test_a_delete_resolves_the_link_itself_not_its_target(tree: tuple[str, Path]) -> None:
    root, _ = tree
    followed = resolve_path(root, "src/out")
    kept = resolve_path(root, "src/out", follow_last=False)
    assert followed is not None and followed.external is True
    assert kept is not None and kept.external is False
    assert kept.full == os.path.join(root, "src", "out")
    # Links on the way are still followed: only the last component is kept.
    assert resolve_path(root, "src/s/../out", follow_last=False) == resolve_path(root, "src/a/out")


def test_the_judged_resolution_is_handed_to_the_same_context_only(tree: tuple[str, Path]) -> None:
    root, outside = tree

    async def judge_then_swap() -> None:
        judged = resolve_target(root, "src/s/x.txt")
        assert judged.match_path == "src/a/b/x.txt"
        # The link is retargeted after judging: the call still acts on what was judged.
        os.remove(os.path.join(root, "src", "s"))
        os.symlink(outside, os.path.join(root, "src", "s"))
        remembered = judged_path(root, "src/s/x.txt")
        assert remembered is not None
        assert remembered.full == os.path.join(root, "src", "a", "b", "x.txt")
        assert judged_path(root, "src/s/x.txt", follow_last=False) is None  # judged with the last link followed

    asyncio.run(judge_then_swap())
    # Another task (here: the test itself) never sees that call's judgement.
    assert judged_path(root, "src/s/x.txt") is None


def test_an_unresolvable_path_is_outside(tree: tuple[str, Path]) -> None:
    root, _ = tree
    assert resolve_path(root, "a\0b") is None
    assert resolve_target(root, "a\0b").external is True
