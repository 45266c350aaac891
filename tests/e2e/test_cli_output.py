"""The exact ``--output json`` and ``jsonl`` lines of the real ``ironhive -p`` process, pinned by syrupy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.support.cli import run_ironhive

TEXT_ANSWER = {"steps": [{"deltas": ["Hello", ", world", "!"], "usage": {"input_tokens": 12, "output_tokens": 4}}]}
TOOL_ROUND = {
    "steps": [
        {
            "text": "Let me look.",
            "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}, "id": "call_1"}],
            "usage": {"input_tokens": 100, "output_tokens": 10},
        },
        {"deltas": ["There is ", "one file."], "usage": {"input_tokens": 150, "output_tokens": 6}},
    ]
}
PROVIDER_ERROR = {
    "steps": [{"error": {"message": "The model is overloaded.", "status": 503, "retryable": True}}],
    "repeat_last": True,
}
SESSION_ID = re.compile(r'"sessionId":"[0-9a-f]+-[0-9a-f]{8}"')
THINKING = {
    "steps": [{"thinking": "The user greets me.", "text": "Hi!", "usage": {"input_tokens": 3, "output_tokens": 1}}]
}


@pytest.fixture(autouse=True)
def no_backoff(tmp_path: Path) -> None:
    """Retries of transient errors without waiting (the global config of the test's HOME)."""
    (tmp_path / ".ironhive").mkdir()
    (tmp_path / ".ironhive" / "config.yaml").write_text("providers:\n  initialBackoffSeconds: 0\n")


def normalized(stdout: str) -> str:
    """The output with the (time-based, random) session id replaced by a placeholder."""
    return SESSION_ID.sub('"sessionId":"<session>"', stdout)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    return work


def run_script(tmp_path: Path, workspace: Path, script: dict[str, object], *flags: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return run_ironhive(
        "--provider", "scripted", "-m", str(path), "-p", "What is here?", *flags, cwd=workspace, home=tmp_path
    )


@pytest.mark.parametrize("output", ["json", "jsonl"])
@pytest.mark.parametrize(
    "script",
    [TEXT_ANSWER, TOOL_ROUND, PROVIDER_ERROR],
    ids=["text-answer", "tool-round", "error"],
)
def test_machine_output_lines(
    tmp_path: Path, workspace: Path, script: dict[str, object], output: str, snapshot: SnapshotAssertion
) -> None:
    completed = run_script(tmp_path, workspace, script, "--output", output)
    assert completed.returncode == (1 if script is PROVIDER_ERROR else 0), completed.stderr
    assert normalized(completed.stdout) == snapshot
    for line in completed.stdout.splitlines():
        json.loads(line)  # every line is one JSON object


@pytest.mark.parametrize("output", ["json", "jsonl"])
def test_thinking_appears_only_with_show_thinking(tmp_path: Path, workspace: Path, output: str) -> None:
    hidden = run_script(tmp_path, workspace, THINKING, "--output", output)
    shown = run_script(tmp_path, workspace, THINKING, "--output", output, "--show-thinking")
    assert "The user greets me." not in hidden.stdout
    assert "The user greets me." in shown.stdout


def test_jsonl_thinking_line(tmp_path: Path, workspace: Path, snapshot: SnapshotAssertion) -> None:
    completed = run_script(tmp_path, workspace, THINKING, "--output", "jsonl", "--show-thinking")
    assert normalized(completed.stdout) == snapshot


def test_text_output_streams_tool_lines_and_tokens(tmp_path: Path, workspace: Path) -> None:
    completed = run_script(tmp_path, workspace, TOOL_ROUND, "--plain", "--show-tokens")
    assert completed.returncode == 0
    assert completed.stdout == (
        "Let me look.\n-> Calling tool: list_directory\nThere is one file.\nTokens: 250 in / 16 out / 266 total\n"
    )
    assert "\x1b[" not in completed.stdout


def test_no_stream_prints_the_whole_answer(tmp_path: Path, workspace: Path) -> None:
    completed = run_script(tmp_path, workspace, TEXT_ANSWER, "--no-stream", "--plain")
    assert completed.stdout == "Hello, world!\n"


def test_error_goes_to_stderr_in_text_mode(tmp_path: Path, workspace: Path) -> None:
    completed = run_script(tmp_path, workspace, PROVIDER_ERROR, "--plain")
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr.splitlines() == [
        "[retry] The model is overloaded. — retrying in 0s",
        "[retry] The model is overloaded. — retrying in 0s",
        "Error: The model is overloaded.",
    ]


def test_unknown_provider_is_a_configuration_error(tmp_path: Path, workspace: Path) -> None:
    completed = run_ironhive("--provider", "nope", "-p", "hi", "-o", "json", cwd=workspace, home=tmp_path)
    assert completed.returncode == 1
    assert json.loads(completed.stdout) == {
        "error": "Provider 'nope' not found. Available: gpustack, openai, anthropic, google, xai, ollama, lmstudio, "
        "azure, lmsupply, scripted",
        "code": 1,
    }


def test_nothing_available_names_what_to_set(tmp_path: Path, workspace: Path) -> None:
    completed = run_ironhive("-p", "hi", cwd=workspace, home=tmp_path, env={"LMSUPPLY_ENABLED": "false"})
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr.startswith("Error: No API provider configured or available.")  # one prefix, not two
    assert "OPENAI_API_KEY" in completed.stderr and "ironhive[local]" in completed.stderr


def test_unknown_flag_is_a_usage_error(tmp_path: Path, workspace: Path) -> None:
    completed = run_ironhive("--bogus", cwd=workspace, home=tmp_path)
    assert completed.returncode == 2
    assert "--bogus" in completed.stderr
    assert completed.stdout == ""


def test_prompt_from_stdin(tmp_path: Path, workspace: Path) -> None:
    completed = run_ironhive("--provider", "scripted", cwd=workspace, home=tmp_path, stdin="piped prompt\n")
    assert completed.stdout == "You said: piped prompt\n"


def test_version_and_python_dash_m(tmp_path: Path, workspace: Path) -> None:
    import subprocess
    import sys

    version = run_ironhive("--version", cwd=workspace, home=tmp_path)
    module = subprocess.run([sys.executable, "-m", "ironhive", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout == module.stdout
    assert version.stdout.startswith("ironhive ")
