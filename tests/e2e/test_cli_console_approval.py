"""The console approval menu through a real pseudo-terminal: one-shot and interactive, approve, edit, reject, stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.terminal import CTRL_C, CTRL_D, ENTER, terminal

WRITE_NOTES = {
    "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "hello"}, "id": "c1"}]
}
MENU = "Allow write_file `notes.md`? [y]es / [a]lways / [n]o / [e]dit / [s]top:"


def scripted(tmp_path: Path, steps: list[dict[str, Any]]) -> tuple[str, ...]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    return ("--provider", "scripted", "-m", str(script))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def one_shot(tmp_path: Path, work: Path, answer: bytes) -> tuple[str, int]:
    args = scripted(tmp_path, [WRITE_NOTES, {"text": "Finished."}])
    with terminal(work, *args, "-p", "write notes", "--plain", home=tmp_path) as term:
        shown = term.read_until(b"[s]top: ").decode()
        term.send(answer)
        code = term.wait()
        return shown + term.display(), code


def test_one_shot_approve_once_runs_the_call(tmp_path: Path, work: Path) -> None:
    shown, code = one_shot(tmp_path, work, b"y\n")
    assert code == 0
    assert MENU in shown and "Write file: notes.md" in shown
    assert "[a]lways approves write_file: notes.md for this session" in shown  # what "always" would cover
    assert (work / "notes.md").read_text() == "hello"
    assert "Finished." in shown


@pytest.mark.parametrize(("answer", "expected"), [(b"n\n", "User rejected"), (b"s\n", "User rejected and stopped")])
def test_one_shot_rejection_leaves_the_disk_alone(tmp_path: Path, work: Path, answer: bytes, expected: str) -> None:
    shown, code = one_shot(tmp_path, work, answer)
    assert code == 0
    assert expected in shown
    assert not (work / "notes.md").exists()


def test_interactive_menu_is_not_the_chat_prompt_and_approves(tmp_path: Path, work: Path) -> None:
    args = scripted(tmp_path, [WRITE_NOTES, {"text": "Finished."}])
    with terminal(work, *args, home=tmp_path) as term:
        term.wait_for_prompt()
        term.send(b"write notes" + ENTER)
        screen = term.wait_for_prompt(MENU)
        assert "[medium]" in screen or "[high]" in screen or "[low]" in screen
        term.send(b"y" + ENTER)
        term.wait_for("Finished.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
    assert (work / "notes.md").read_text() == "hello"


def test_interactive_edit_changes_the_arguments_and_asks_again(tmp_path: Path, work: Path) -> None:
    args = scripted(tmp_path, [WRITE_NOTES, {"text": "Finished."}])
    with terminal(work, *args, home=tmp_path) as term:
        term.wait_for_prompt()
        term.send(b"write notes" + ENTER)
        term.wait_for_prompt(MENU)
        term.send(b"e" + ENTER)
        term.wait_for('Arguments (JSON; empty to go back): {"path": "notes.md", "content": "hello"}')
        term.send(b"\x15" + b'{"path": "other.md", "content": "changed"}' + ENTER)  # Ctrl+U clears the line
        term.wait_for_prompt("Allow write_file `other.md`?")  # the changed call is judged (and asked) again
        term.send(b"y" + ENTER)
        term.wait_for("Finished.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
    assert (work / "other.md").read_text() == "changed"
    assert not (work / "notes.md").exists()


def test_interactive_ctrl_c_at_the_menu_cancels_the_turn(tmp_path: Path, work: Path) -> None:
    args = scripted(tmp_path, [WRITE_NOTES, {"text": "Next answer."}])
    with terminal(work, *args, home=tmp_path) as term:
        term.wait_for_prompt()
        term.send(b"write notes" + ENTER)
        term.wait_for_prompt(MENU)
        term.send(CTRL_C)
        term.wait_for("Cancelled.")
        term.wait_for_prompt()
        term.send(b"x" + ENTER)  # the terminal belongs to the chat prompt again, not to a forgotten question
        term.wait_for("Next answer.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
    assert not (work / "notes.md").exists()
