"""Colour in interactive mode through a real pseudo-terminal: ``NO_COLOR`` writes no SGR sequence (``ESC [ … m``) at
all, spinner and approval menu included, while the line editor still moves the cursor; ``--plain`` writes no escape
sequence whatsoever; without either the same session is coloured (so the checks can fail)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.terminal import CTRL_D, ENTER, Terminal, terminal

SGR = re.compile(rb"\x1b\[[0-9;:]*m")
"""Select Graphic Rendition: colour, bold, dim, italic, reverse, and the reset."""
CURSOR = re.compile(rb"\x1b\[[0-9;]*[ABCDGHJK]|\r")
"""Cursor movement and erasing, which line editing and the spinner's redraw need."""
WRITE_NOTES = {
    "text": "Writing.",
    "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "hello"}, "id": "c1"}],
    "delay_seconds": 1.5,
}
"""A slow first piece (the spinner counts), then a call that needs approval (the menu)."""
MENU = "Allow write_file `notes.md`?"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def scripted(tmp_path: Path, steps: list[dict[str, Any]]) -> tuple[str, ...]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    return ("--provider", "scripted", "-m", str(script))


def spinner_then_menu(term: Terminal) -> None:
    """Send a prompt, see the spinner, approve the call at the menu, see the answer, leave."""
    term.wait_for_prompt()
    term.send(b"write notes" + ENTER)
    term.wait_for(lambda screen: re.search(r"Waiting for the model… [0-9.]+s", screen) is not None)
    term.wait_for_prompt(MENU)
    term.send(b"y" + ENTER)
    term.wait_for("Finished.")
    term.wait_for_prompt()
    term.send(CTRL_D)
    assert term.wait() == 0


def test_no_color_writes_no_sgr_in_the_spinner_the_menu_or_the_editor(tmp_path: Path, work: Path) -> None:
    args = scripted(tmp_path, [WRITE_NOTES, {"text": "Finished.", "delay_seconds": 0.5}])
    with terminal(work, *args, home=tmp_path, env={"NO_COLOR": "1"}) as term:
        spinner_then_menu(term)
        raw = term.seen
    assert (work / "notes.md").read_text() == "hello"
    assert SGR.findall(raw) == []
    assert CURSOR.search(raw)  # what NO_COLOR leaves: the editor and the spinner still move the cursor


def test_the_same_session_is_coloured_without_no_color(tmp_path: Path, work: Path) -> None:
    args = scripted(tmp_path, [WRITE_NOTES, {"text": "Finished.", "delay_seconds": 0.5}])
    with terminal(work, *args, home=tmp_path, env={"NO_COLOR": ""}) as term:
        spinner_then_menu(term)
        raw = term.seen
    assert re.search(rb"\x1b\[[0-9;]*3[0-9](;[0-9]+)*m", raw)  # a foreground colour: the check above can fail


def test_plain_writes_no_escape_sequence_at_all(tmp_path: Path, work: Path) -> None:
    args = scripted(tmp_path, [{**WRITE_NOTES, "delay_seconds": 0}, {"text": "Finished."}])
    with terminal(work, *args, "--plain", home=tmp_path, env={"NO_COLOR": ""}) as term:
        term.read_until(b"> ")
        term.send(b"write notes" + ENTER)
        term.read_until(b"[s]top: ")
        term.send(b"y" + ENTER)
        term.read_until(b"Finished.")
        term.read_until(b"> ")
        term.send(CTRL_D)
        assert term.wait() == 0
        raw = term.seen
    assert (work / "notes.md").read_text() == "hello"
    assert b"\x1b" not in raw, raw
