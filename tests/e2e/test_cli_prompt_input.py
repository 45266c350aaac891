"""Prompt input of the real ``ironhive``: a positional prompt, stdin as a ``<stdin>`` block after it, stdin alone,
a terminal stdin never read, a silent open stdin not waited on for ever, and the warm path doing the same."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_warm_daemon import Warm
from tests.support.cli import clean_environment, ironhive_executable, run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.terminal import terminal

ECHO = ("--provider", "scripted")
"""The scripted provider without a script answers ``You said: <the prompt it got>``."""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def echoed(completed: subprocess.CompletedProcess[str]) -> str:
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("You said: ")
    return completed.stdout.removeprefix("You said: ").removesuffix("\n")


def test_a_positional_prompt_runs_the_one_shot(tmp_path: Path, work: Path) -> None:
    assert echoed(run_ironhive(*ECHO, "explain this repo", cwd=work, home=tmp_path)) == "explain this repo"
    assert echoed(run_ironhive("explain this repo", *ECHO, cwd=work, home=tmp_path)) == "explain this repo"
    assert echoed(run_ironhive(*ECHO, "hello", cwd=work, home=tmp_path)) == "hello"  # one word far from any command
    assert echoed(run_ironhive(*ECHO, "--", "-v is a flag?", cwd=work, home=tmp_path)) == "-v is a flag?"


@pytest.mark.parametrize(
    "args",
    [
        (*ECHO, "-p", "write a commit message"),
        (*ECHO, "write a commit message"),
        ("run", *ECHO, "write a commit message"),
        ("run", *ECHO, "-p", "write a commit message"),
    ],
)
def test_stdin_follows_the_prompt_as_a_delimited_block(tmp_path: Path, work: Path, args: tuple[str, ...]) -> None:
    diff = "diff --git a/x b/x\n-old\n+new\n\n"
    completed = run_ironhive(*args, cwd=work, home=tmp_path, stdin=diff)
    assert echoed(completed) == "write a commit message\n\n<stdin>\ndiff --git a/x b/x\n-old\n+new\n</stdin>"


def test_empty_stdin_adds_nothing_and_stdin_alone_is_the_prompt(tmp_path: Path, work: Path) -> None:
    assert echoed(run_ironhive(*ECHO, "-p", "hi", cwd=work, home=tmp_path, stdin=" \n")) == "hi"
    assert echoed(run_ironhive(*ECHO, cwd=work, home=tmp_path, stdin="  piped prompt\n")) == "piped prompt"
    assert echoed(run_ironhive("run", *ECHO, cwd=work, home=tmp_path, stdin="piped to run\n")) == "piped to run"


def test_a_prompt_given_twice_is_a_usage_error(tmp_path: Path, work: Path) -> None:
    completed = run_ironhive(*ECHO, "-p", "one", "two words", cwd=work, home=tmp_path)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == "Error: Give the prompt once: as an argument or with -p, not both.\n"


def test_stdin_that_is_not_text_is_a_clear_error(tmp_path: Path, work: Path) -> None:
    completed = subprocess.run(
        [ironhive_executable(), *ECHO, "-p", "describe this"],
        cwd=work,
        env=clean_environment(tmp_path),
        input=b"\x89PNG\r\n\x1a\n\xff\xfe",
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert (completed.returncode, completed.stdout) == (1, b"")
    assert completed.stderr.decode().startswith("Error: Standard input is not utf-8 text (byte 0x89 at offset 0)")


def test_a_terminal_stdin_is_never_read(tmp_path: Path, work: Path) -> None:
    with terminal(work, *ECHO, "-p", "hi", home=tmp_path, stdout_pipe=True) as term:
        code = term.wait(timeout=60)  # a read of the terminal would wait here for ever: nobody types
        out = term.piped_stdout().decode()
        shown = term.seen.decode(errors="replace")
    assert echoed(subprocess.CompletedProcess(ECHO, code, out, shown)) == "hi"


def test_a_silent_open_stdin_is_waited_for_briefly_then_left_with_a_warning(tmp_path: Path, work: Path) -> None:
    process = subprocess.Popen(
        [ironhive_executable(), *ECHO, "-p", "hi"],
        cwd=work,
        env=clean_environment(tmp_path),
        stdin=subprocess.PIPE,  # held open and never written, as a CI runner's stdin can be
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    try:
        process.wait(timeout=60)  # stdin stays open all along
        elapsed = time.monotonic() - started
        assert process.stdout is not None and process.stderr is not None
        stdout, stderr = process.stdout.read(), process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert elapsed >= 3
    assert (process.returncode, stdout) == (0, "You said: hi\n")
    assert "Warning: nothing arrived on stdin within 3 seconds" in stderr


def test_the_warm_path_combines_stdin_and_runs_a_positional_prompt_as_a_direct_run_does(tmp_path: Path) -> None:
    warm = Warm(tmp_path)
    try:
        with LoopbackOpenAIServer() as server:
            first = warm.start(server)
            server.enqueue_text("feat: new")
            combined = warm.warm_run_env(server, "-p", "write a commit message", "-o", "json", stdin="+new\n")
            combined_request = server.requests[-1]
            server.enqueue_text("It is a repository.")
            positional = warm.warm_run_env(server, "explain this repo", "-o", "json")
            positional_request = server.requests[-1]
            typo = warm.warm_run_env(server, "sesions", "list")
        served = warm.status()
    finally:
        warm.stop()
    assert combined.returncode == 0, combined.stderr
    assert combined_request["messages"][-1] == {
        "role": "user",
        "content": "write a commit message\n\n<stdin>\n+new\n</stdin>",
    }
    assert positional.returncode == 0, positional.stderr
    assert positional_request["messages"][-1] == {"role": "user", "content": "explain this repo"}
    assert (typo.returncode, typo.stdout) == (2, "")
    assert typo.stderr.startswith('Error: Unknown command "sesions". Did you mean "sessions"?')
    assert served == {"pid": first["pid"], "served": first["served"] + 3}  # all three forked from the warm process
