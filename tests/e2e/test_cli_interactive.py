"""Interactive mode through a real pseudo-terminal, its output rendered by a terminal emulator.

Line editing, history kept per project, multi-line input, the spinner before the first token, a long answer that
leaves each line once in the scrollback, and Ctrl+C once (cancel) and twice (leave).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.terminal import ALT_ENTER, CTRL_C, CTRL_D, ENTER, LEFT, UP, Terminal, terminal


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def scripted(tmp_path: Path, steps: list[dict[str, Any]]) -> tuple[str, ...]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    return ("--provider", "scripted", "-m", str(script))


@pytest.fixture
def openai() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer() as server:
        yield server


def openai_args(server: LoopbackOpenAIServer) -> dict[str, Any]:
    env = {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": "gpt-test", "OPENAI_ENDPOINT": server.base_url}
    return {"env": env}


def user_messages(server: LoopbackOpenAIServer) -> list[str]:
    return [request["messages"][-1]["content"] for request in server.requests]


def ask(term: Terminal, keys: bytes, until: str) -> str:
    term.wait_for_prompt()
    term.send(keys)
    term.wait_for(until)
    return term.wait_for_prompt()


def test_prompt_answer_cancel_and_exit_with_statistics(tmp_path: Path, project: Path, home: Path) -> None:
    args = scripted(
        tmp_path,
        [
            {"text": "Hello **there**, friend.", "usage": {"input_tokens": 100, "output_tokens": 20}},
            {"text": " ".join(f"word{i}" for i in range(200)), "delay_seconds": 0.05},
            {"text": "Still here.", "usage": {"input_tokens": 50, "output_tokens": 5}},
        ],
    )
    with terminal(project, *args, home=home) as term:
        ask(term, b"hi" + ENTER, "friend.")
        term.wait_for_prompt()
        term.send(b"tell me a long story" + ENTER)
        term.wait_for("word3")
        term.send(CTRL_C)
        term.wait_for("Cancelled.")
        term.wait_for_prompt()
        ask(term, b"/help" + ENTER, "/sessions")
        ask(term, b"again" + ENTER, "Still here.")
        term.send(b"exit" + ENTER)
        term.wait_for("Est. Cost")
        code = term.wait()
        shown = "\n".join(term.lines())
    assert code == 0
    assert shown.count("Cancelled.") == 1
    assert "Interrupt" not in shown and "again to leave" not in shown  # one Ctrl+C during a turn: one message
    assert re.search(r"Requests\s+│\s+2", shown) and re.search(r"Input Tokens\s+│\s+150", shown)


def test_line_editing_sends_the_edited_line(project: Path, home: Path, openai: LoopbackOpenAIServer) -> None:
    openai.enqueue_text("Noted.")
    with terminal(project, **openai_args(openai), home=home) as term:
        term.wait_for_prompt()
        term.send(b"hllo world")
        term.send(LEFT * 9 + b"e" + ENTER)  # back to after the "h", insert the missing "e"
        term.wait_for("Noted.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
    assert user_messages(openai) == ["hello world"]


def test_history_recalls_a_line_of_an_earlier_run_in_this_project(
    project: Path, home: Path, openai: LoopbackOpenAIServer
) -> None:
    openai.enqueue_text("First.").enqueue_text("Second.")
    with terminal(project, **openai_args(openai), home=home) as term:
        ask(term, b"remember the milk" + ENTER, "First.")
        term.send(b"exit" + ENTER)
        assert term.wait() == 0
    with terminal(project, **openai_args(openai), home=home) as term:
        term.wait_for_prompt()
        term.send(UP)  # the previous run's last line: "exit"
        term.send(UP)
        term.wait_for("> remember the milk")
        term.send(ENTER)
        term.wait_for("Second.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
    assert user_messages(openai) == ["remember the milk", "remember the milk"]
    history = next((home / ".ironhive" / "projects").glob("*/prompt_history"))
    assert history.stat().st_mode & 0o077 == 0  # owner-only, like everything under ~/.ironhive


def test_alt_enter_starts_a_new_line_of_the_same_prompt(
    project: Path, home: Path, openai: LoopbackOpenAIServer
) -> None:
    openai.enqueue_text("Two lines.")
    with terminal(project, **openai_args(openai), home=home) as term:
        term.wait_for_prompt()
        term.send(b"first line" + ALT_ENTER + b"second line" + ENTER)
        term.wait_for("Two lines.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
    assert user_messages(openai) == ["first line\nsecond line"]


def test_spinner_counts_the_seconds_before_the_first_token(tmp_path: Path, project: Path, home: Path) -> None:
    args = scripted(tmp_path, [{"deltas": ["Late ", "answer."], "delay_seconds": 1.5}])
    with terminal(project, *args, home=home) as term:
        term.wait_for_prompt()
        term.send(b"hi" + ENTER)
        waiting = term.wait_for(lambda screen: re.search(r"Waiting for the model… [0-9.]+s", screen) is not None)
        assert "Late" not in waiting
        term.wait_for(lambda screen: re.search(r"Waiting for the model… (0\.[5-9]|1\.[0-9])s", screen) is not None)
        shown = term.wait_for("Late answer.")
        assert "Waiting for the model" not in shown  # gone once the answer starts
        term.wait_for_prompt()


def test_a_long_answer_leaves_each_line_once_in_a_20_row_terminal(tmp_path: Path, project: Path, home: Path) -> None:
    items = [f"- item {number:03d} of the long list\n" for number in range(1, 61)]
    answer = ["# The long heading\n", "\n", "Some words first.\n", "\n", *items, "\n", "The end.\n"]
    args = scripted(tmp_path, [{"deltas": answer, "delay_seconds": 0.03}])
    with terminal(project, *args, home=home, rows=20) as term:
        term.wait_for_prompt()
        term.send(b"a long list please" + ENTER)
        term.wait_for("The end.")
        term.wait_for_prompt()
        term.send(CTRL_D)
        assert term.wait() == 0
        lines = term.lines()
    assert sum("The long heading" in line for line in lines) == 1
    assert sum("Some words first." in line for line in lines) == 1
    for number in range(1, 61):
        assert sum(f"item {number:03d} of" in line for line in lines) == 1, f"item {number:03d}"
    assert sum("The end." in line for line in lines) == 1
    first = next(i for i, line in enumerate(lines) if "item 001" in line)
    expected = [f"• item {n:03d} of the long list" for n in range(1, 61)]
    assert [line.strip() for line in lines[first : first + 60]] == expected  # in order, no line lost


def test_ctrl_c_twice_during_a_slow_request_leaves_with_130(tmp_path: Path, project: Path, home: Path) -> None:
    args = scripted(tmp_path, [{"deltas": ["never ", "shown"], "delay_seconds": 30}])
    with terminal(project, *args, home=home) as term:
        term.wait_for_prompt()
        term.send(b"slow" + ENTER)
        term.wait_for("Waiting for the model")
        term.send(CTRL_C)
        time.sleep(0.3)  # a person's double press (two signals sent at once would be delivered as one)
        term.send(CTRL_C)
        term.wait_for("Session statistics")
        code = term.wait()
        shown = "\n".join(term.lines())
    assert code == 130
    assert shown.count("Cancelled.") == 1 and "Press Ctrl+C again" not in shown


def test_ctrl_c_at_the_prompt_clears_the_line_then_asks_then_leaves(tmp_path: Path, project: Path, home: Path) -> None:
    with terminal(project, *scripted(tmp_path, [{"text": "unused"}]), home=home) as term:
        term.wait_for_prompt()
        term.send(b"half a thought")
        term.wait_for("> half a thought")
        term.send(CTRL_C)  # a line with text: cleared, nothing said
        term.wait_for(lambda screen: "half a thought" not in screen and term.at_prompt())
        term.send(CTRL_C)  # an empty line: one hint
        time.sleep(0.3)
        term.send(CTRL_C)  # the second within a second: leave
        term.wait_for("Session statistics")
        code = term.wait()
        shown = "\n".join(term.lines())
    assert code == 130
    assert shown.count("Press Ctrl+C again") == 1


def test_ctrl_c_once_at_an_empty_prompt_does_not_leave(tmp_path: Path, project: Path, home: Path) -> None:
    with terminal(project, *scripted(tmp_path, [{"text": "Still answering."}]), home=home) as term:
        term.wait_for_prompt()
        term.send(CTRL_C)
        term.wait_for("Press Ctrl+C again to leave")
        ask(term, b"hi" + ENTER, "Still answering.")  # more than a second later: a prompt as usual
        term.send(b"quit" + ENTER)
        assert term.wait() == 0
