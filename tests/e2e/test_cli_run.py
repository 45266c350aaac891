"""``ironhive run``: the prompt argument, --json, and --auto-commit committing only what the run's tools changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.support.cli import run_ironhive

WRITE_MODULE = {
    "steps": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "src/new.py", "content": "x = 1\n"}, "id": "c1"}]},
        {"text": "Added src/new.py.", "usage": {"input_tokens": 10, "output_tokens": 4}},
    ]
}
JUST_TALK = {"steps": [{"text": "Nothing to change."}]}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    (root / "README.md").write_text("# Repo\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    (root / "README.md").write_text("# Repo\nAn unrelated edit in progress.\n")
    return root


def run(tmp_path: Path, cwd: Path, script: dict[str, object], *args: str):  # type: ignore[no-untyped-def]
    (tmp_path / "script.json").write_text(json.dumps(script))
    return run_ironhive(
        "run", *args, "--provider", "scripted", "-m", str(tmp_path / "script.json"), cwd=cwd, home=tmp_path / "home"
    )


def test_auto_commit_commits_only_the_files_the_run_wrote(tmp_path: Path, repository: Path) -> None:
    completed = run(tmp_path, repository, WRITE_MODULE, "Add a module", "--auto-commit")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "Added src/new.py."
    assert "✓ Changes committed: ironhive: Add a module" in completed.stderr
    assert "1 file(s) changed" in completed.stderr
    assert git(repository, "show", "--name-only", "--format=%s", "HEAD").split() == [
        "ironhive:",
        "Add",
        "a",
        "module",
        "src/new.py",
    ]
    assert git(repository, "status", "--porcelain").strip() == "M README.md"  # the unrelated edit stays out


def test_auto_commit_message_option_and_long_prompts(tmp_path: Path, repository: Path) -> None:
    run(tmp_path, repository, WRITE_MODULE, "Add a module", "--auto-commit", "--commit-message", "feat: module")
    assert git(repository, "log", "-1", "--format=%s").strip() == "feat: module"
    (repository / "src" / "new.py").unlink()
    git(repository, "commit", "-q", "-am", "remove")
    long_prompt = "Please add a small module\nthat defines x and is useful for many things later on"
    run(tmp_path, repository, WRITE_MODULE, long_prompt, "--auto-commit")
    subject = git(repository, "log", "-1", "--format=%s").strip()
    assert subject == "ironhive: " + "Please add a small module that defines x and is u"[:47] + "..."


def test_auto_commit_skips_without_changes_or_repository(tmp_path: Path, repository: Path) -> None:
    nothing = run(tmp_path, repository, JUST_TALK, "Just talk", "--auto-commit")
    assert "Auto-commit skipped: No changes detected" in nothing.stderr
    assert nothing.returncode == 0
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "src").mkdir()
    outside = run(tmp_path, plain, WRITE_MODULE, "Add a module", "--auto-commit")
    assert "Auto-commit skipped: Not a Git repository" in outside.stderr
    assert outside.returncode == 0


def test_run_json_and_prompt_required(tmp_path: Path, repository: Path, snapshot: SnapshotAssertion) -> None:
    completed = run(tmp_path, repository, WRITE_MODULE, "-p", "Add a module", "--json")
    assert completed.stdout == snapshot
    assert json.loads(completed.stdout) == {
        "content": "Added src/new.py.",
        "thinking": None,
        "usage": {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14},
    }
    missing = run_ironhive("run", cwd=repository, home=tmp_path / "home")
    assert (missing.returncode, missing.stderr) == (1, "Error: Prompt is required.\n")
