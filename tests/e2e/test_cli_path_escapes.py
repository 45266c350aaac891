"""The real ``ironhive -p`` with a scripted model trying the path escapes of the attack corpus: symlinks followed by
``..``, links to the outside, hard links. Sentinel files outside the working directory are never read or written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_ironhive

SENTINEL = "SENTINEL-OUTSIDE-2c71"
ENV_SECRET = "ENV-SECRET-b905"
DENIED_SECRET = "DENIED-SECRET-6d3e"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """``project/`` with ``src/s -> src/a/b``, ``src/out -> outside/``, a file link and a hard link to the outside."""
    root = tmp_path / "project"
    (root / "src" / "a" / "b").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "db.txt").write_text(DENIED_SECRET)
    (root / ".env").write_text(f"TOKEN={ENV_SECRET}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SENTINEL)
    (outside / "hard-source.txt").write_text(SENTINEL)
    os.symlink(root / "src" / "a" / "b", root / "src" / "s")
    os.symlink(outside, root / "src" / "out")
    os.symlink(outside / "secret.txt", root / "src" / "linked.txt")
    os.link(outside / "hard-source.txt", root / "src" / "hard.txt")
    return root


def outside_state(tmp_path: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((tmp_path / "outside").iterdir())}


def run_script(tmp_path: Path, work: Path, calls: list[tuple[str, dict[str, object]]]) -> tuple[str, list[Any]]:
    numbered = [
        {"name": name, "arguments": arguments, "id": f"call_{index}"} for index, (name, arguments) in enumerate(calls)
    ]
    # Three calls a round: a turn allows ten rounds.
    steps = [{"tool_calls": numbered[start : start + 3]} for start in range(0, len(numbered), 3)]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [*steps, {"text": "Done."}]}))
    completed = run_ironhive(
        "--provider", "scripted", "-m", str(script), "-p", "go", "-o", "jsonl", cwd=work, home=tmp_path / "home"
    )
    assert completed.returncode == 0, completed.stderr
    results = [line for line in map(json.loads, completed.stdout.splitlines()) if line["type"] == "tool_result"]
    assert len(results) == len(calls), completed.stdout
    return completed.stdout + completed.stderr, results


CORPUS: list[tuple[str, dict[str, object]]] = [
    ("read_file", {"path": "src/s/../out/secret.txt"}),
    ("write_file", {"path": "src/s/../out/pwned.txt", "content": "pwned"}),
    ("edit_file", {"path": "src/s/../out/secret.txt", "old_string": "SENTINEL", "new_string": "pwned"}),
    ("list_directory", {"path": "src/s/../out"}),
    ("delete_file", {"path": "src/s/../out/secret.txt"}),
    ("grep_files", {"pattern": "SENTINEL", "path": "src/s/../out"}),
    ("glob_files", {"pattern": "*", "path": "src/s/../out"}),
    ("read_file", {"path": "src/out/secret.txt"}),
    ("write_file", {"path": "src/out/secret.txt", "content": "pwned"}),
    ("read_file", {"path": "src/linked.txt"}),
    ("edit_file", {"path": "src/linked.txt", "old_string": "SENTINEL", "new_string": "pwned"}),
    ("list_directory", {"path": "src/out", "recursive": True}),
    ("read_file", {"path": "src/hard.txt"}),
    ("write_file", {"path": "src/hard.txt", "content": "pwned"}),
    ("grep_files", {"pattern": "SENTINEL|SECRET|app"}),
    ("glob_files", {"pattern": "**/*"}),
    ("list_directory", {"path": ".", "recursive": True}),
    ("delete_file", {"path": "src/hard.txt"}),
    ("edit_file", {"path": "src/hard.txt", "old_string": "SENTINEL", "new_string": "pwned"}),
]


def test_the_corpus_with_the_default_rules_never_touches_the_outside(tmp_path: Path, work: Path) -> None:
    before = outside_state(tmp_path)
    output, results = run_script(tmp_path, work, CORPUS)
    for marker in (SENTINEL, ENV_SECRET, DENIED_SECRET, "hard-source"):
        assert marker not in output
    assert outside_state(tmp_path) == before
    # The write went where the rules judged it: src/s is src/a/b, so ".." is src/a.
    assert results[1]["success"] is True
    assert (work / "src" / "a" / "out" / "pwned.txt").read_text() == "pwned"
    assert results[3]["result"] == "[FILE] pwned.txt (5 B)"
    # Links to the outside and the hard link are outside: asked, so rejected without a terminal.
    rejected = [
        CORPUS[index][1]["path"] for index, result in enumerate(results) if "Approval rejected" in result["result"]
    ]
    assert rejected == [
        "src/s/../out/secret.txt",  # delete_file: asked before any delete
        "src/out/secret.txt",
        "src/out/secret.txt",
        "src/linked.txt",
        "src/linked.txt",
        "src/out",
        "src/hard.txt",
        "src/hard.txt",
        "src/hard.txt",
        "src/hard.txt",
    ]
    grep = results[14]["result"].splitlines()
    assert grep[:2] == ["Found 1 matches in 1 files:", "src/app.py:1: print('app')"]
    assert grep[2].startswith("(5 files not shown: the read permission rules")


def test_rules_that_allow_everything_still_leave_hard_links_alone(tmp_path: Path, work: Path) -> None:
    hard = work.resolve() / "src" / "hard.txt"
    config = tmp_path / "home" / ".ironhive" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "permissions:\n"
        "  askBeforeDelete: false\n"
        "  read: [{pattern: '**/*', action: allow}]\n"
        "  edit: [{pattern: '**/*', action: allow}]\n"
        "  tools: [{pattern: '*', action: allow}]\n"
        f"  externalDirectory: [{{pattern: '{hard.as_posix()}', action: allow}}]\n"
    )
    calls: list[tuple[str, dict[str, object]]] = [
        ("write_file", {"path": "src/hard.txt", "content": "pwned"}),
        ("edit_file", {"path": "src/hard.txt", "old_string": "SENTINEL", "new_string": "pwned"}),
        ("write_file", {"path": "src/hard.txt", "content": "pwned", "append": True}),
        ("delete_file", {"path": "src/hard.txt"}),
        ("grep_files", {"pattern": "SENTINEL"}),
        ("write_file", {"path": "src/s/../out/pwned.txt", "content": "pwned"}),
    ]
    before = outside_state(tmp_path)
    output, results = run_script(tmp_path, work, calls)
    assert SENTINEL not in output
    assert outside_state(tmp_path) == before
    assert hard.read_text() == SENTINEL
    for result in results[:4]:
        assert result["success"] is False
        assert "it is a hard link (one of 2 names of the same file)" in result["result"], result
    assert results[4]["result"].startswith("No matches for 'SENTINEL'")
    assert results[5]["success"] is True
    assert (work / "src" / "a" / "out" / "pwned.txt").read_text() == "pwned"
