"""An answer cut short (output limit, repetition, content filter) says so on every surface; a normal one does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive
from tests.support.server_process import ServerProcess

CUT = ("length", "repetition", "content_filter")


def script(tmp_path: Path, finish_reason: str | None) -> Path:
    step: dict[str, object] = {"text": "A partial answer", "usage": {"input_tokens": 10, "output_tokens": 3}}
    if finish_reason is not None:
        step["finish_reason"] = finish_reason
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [step]}))
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def run(tmp_path: Path, work: Path, finish_reason: str | None, *flags: str) -> tuple[str, str]:
    model = str(script(tmp_path, finish_reason))
    done = run_ironhive("--provider", "scripted", "-m", model, "-p", "go", *flags, cwd=work, home=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


@pytest.mark.parametrize("reason", CUT)
def test_text_mode_notes_it_on_stderr_and_keeps_stdout_the_answer(tmp_path: Path, work: Path, reason: str) -> None:
    stdout, stderr = run(tmp_path, work, reason)

    assert stdout.strip() == "A partial answer"
    assert "[answer cut short:" in stderr


def test_a_normal_stop_adds_nothing(tmp_path: Path, work: Path) -> None:
    stdout, stderr = run(tmp_path, work, None)
    assert stdout.strip() == "A partial answer" and "cut short" not in stderr

    as_json = json.loads(run(tmp_path, work, None, "-o", "json")[0])
    assert "finishReason" not in as_json
    lines = [json.loads(line) for line in run(tmp_path, work, None, "-o", "jsonl")[0].splitlines()]
    assert "finishReason" not in lines[-1]


@pytest.mark.parametrize("reason", CUT)
def test_json_jsonl_and_run_json_carry_the_reason(tmp_path: Path, work: Path, reason: str) -> None:
    as_json = json.loads(run(tmp_path, work, reason, "-o", "json")[0])
    lines = [json.loads(line) for line in run(tmp_path, work, reason, "-o", "jsonl")[0].splitlines()]
    done = run_ironhive(
        "run", "--provider", "scripted", "-m", str(script(tmp_path, reason)), "--json", "go", cwd=work, home=tmp_path
    )

    assert as_json["finishReason"] == reason and as_json["content"] == "A partial answer"
    assert lines[-1] == {"type": "done", "sessionId": lines[0]["sessionId"], "finishReason": reason}
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["finish_reason"] == reason


def test_the_wire_turn_end_carries_it_only_when_cut(tmp_path: Path, work: Path) -> None:
    path = tmp_path / "script.json"
    steps = [{"text": "cut", "finish_reason": "length"}, {"text": "whole"}]
    path.write_text(json.dumps({"steps": steps}))
    with ServerProcess("--provider", "scripted", "-m", str(path), cwd=work, home=tmp_path) as server:
        assert server.next_event()["type"] == "session_started"
        server.send({"type": "user_message", "content": "one"})
        first = server.read_turn()
        server.send({"type": "user_message", "content": "two"})
        second = server.read_turn()

    assert first[-1]["type"] == "turn_end" and first[-1]["finish_reason"] == "length"
    assert second[-1]["type"] == "turn_end" and "finish_reason" not in second[-1]
