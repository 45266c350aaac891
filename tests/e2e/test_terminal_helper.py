"""The pty test helper itself: markers in one chunk or split across two are found, and nothing a child started outlives
the test."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.support.terminal import leftovers, terminal

PYTHON = [sys.executable, "-c"]


def test_two_markers_that_arrive_in_one_chunk_are_both_found(tmp_path: Path) -> None:
    code = "import os, sys; os.write(1, b'one> two> '); sys.stdin.readline()"
    with terminal(tmp_path, code, home=tmp_path, program=PYTHON) as term:
        assert term.read_until(b"> ") == b"one> "
        assert term.read_until(b"> ") == b"two> "  # already read with the first: found all the same
        term.send(b"\r")
        assert term.wait() == 0


def test_a_marker_split_across_two_reads_is_found(tmp_path: Path) -> None:
    code = "import os, sys, time; os.write(1, b'rea'); time.sleep(0.3); os.write(1, b'dy> '); sys.stdin.readline()"
    with terminal(tmp_path, code, home=tmp_path, program=PYTHON) as term:
        assert term.read_until(b"ready> ") == b"ready> "
        term.send(b"\r")
        assert term.wait() == 0


def test_a_missing_marker_fails_with_what_the_screen_showed(tmp_path: Path) -> None:
    with (
        terminal(tmp_path, "print('something else')", home=tmp_path, program=PYTHON) as term,
        pytest.raises(AssertionError, match="something else"),
    ):
        term.read_until(b"never printed", timeout=5)


@pytest.mark.parametrize("detach", ["process_group=0", "start_new_session=True"])
def test_close_kills_what_the_child_started_in_other_groups_and_sessions(tmp_path: Path, detach: str) -> None:
    code = (
        "import subprocess, sys\n"
        f"child = subprocess.Popen(['sleep', '300'], {detach})\n"
        "print(f'pid={child.pid}=', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    with terminal(tmp_path, code, home=tmp_path, program=PYTHON) as term:
        root = term.process.pid
        shown = term.read_until(b"=\r\n").decode()
        sleeper = int(shown.split("pid=")[1].split("=")[0])
        assert sleeper in leftovers(root)
    deadline = time.monotonic() + 10
    while leftovers(root) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(root) == set()
