"""Shell rules through the real ``ironhive -p`` with a scripted model: git options and redirections that run or write
elsewhere are asked about (and, with no terminal, rejected), re-spelled denies are denied, safe subcommands run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive


def run_commands(tmp_path: Path, work: Path, *commands: str) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = [
        {"tool_calls": [{"name": "execute_command", "arguments": {"command": command}, "id": f"call_{index}"}]}
        for index, command in enumerate(commands, start=1)
    ]
    steps.append({"text": "Done."})
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    completed = run_ironhive(
        "--provider", "scripted", "-m", str(script), "-p", "do it", "-o", "jsonl", cwd=work, home=tmp_path / "home"
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    return [line for line in lines if line["type"] == "tool_result"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A git repository with one file, next to an ``outside`` folder the model must not write to."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / "outside").mkdir()
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    subprocess.run([*git, "add", "src"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", "first-commit"], check=True, capture_output=True)
    (root / "src" / "new.py").write_text("print(2)\n")
    return root


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x='!touch {outside}/sentinel' x",
        "git --version > {outside}/sentinel",
        "git -c core.fsmonitor='touch {outside}/sentinel' status",
        "git log --output={outside}/sentinel",
        "git -c alias.x='!mkdir -p .ironhive && cp src/app.py .ironhive/permissions.yaml' x",
    ],
    ids=["alias", "redirection", "fsmonitor", "log-output", "alias-writes-permissions"],
)
def test_git_options_and_redirections_are_not_run_without_approval(tmp_path: Path, work: Path, command: str) -> None:
    outside = tmp_path / "outside"
    [result] = run_commands(tmp_path, work, command.format(outside=outside))
    assert result["success"] is False
    assert result["result"] == (
        "Approval rejected: 'execute_command' requires approval but there is no interactive console to ask on"
    )
    assert not (outside / "sentinel").exists()
    assert not (work / ".ironhive" / "permissions.yaml").exists()


@pytest.mark.parametrize(
    "command", ["env X=1 rm -rf src", "/bin/rm -r -f src", "nice rm -fr src", "command rm --recursive --force src"]
)
def test_respelled_deletes_are_denied(tmp_path: Path, work: Path, command: str) -> None:
    [result] = run_commands(tmp_path, work, command)
    assert result["result"] == "Permission denied: Destructive command"
    assert (work / "src" / "app.py").exists()


def test_pipe_into_a_shell_without_spaces_is_denied(tmp_path: Path, work: Path) -> None:
    outside = tmp_path / "outside"
    [result] = run_commands(tmp_path, work, f"echo 'touch {outside}/sentinel'|sh")
    assert result["result"] == "Permission denied: Potentially dangerous command"
    assert not (outside / "sentinel").exists()


def test_safe_subcommands_still_run(tmp_path: Path, work: Path) -> None:
    status, log = run_commands(tmp_path, work, "git status --short 2>&1", "git --version > /dev/null && git log -1")
    assert status["success"] is True
    assert "src/new.py" in str(status["result"])
    assert log["success"] is True
    assert "first-commit" in str(log["result"])
