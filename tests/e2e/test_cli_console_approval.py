"""The console approver through a real pseudo-terminal: an asked call is approved, rejected or rejected-and-stopped."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cli import clean_environment, ironhive_executable

SCRIPT = {
    "steps": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "hello"}, "id": "c1"}]},
        {"text": "Finished."},
    ]
}


def read_until(fd: int, marker: bytes, timeout: float = 30.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"timed out waiting for {marker!r}; saw {seen[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def run_on_terminal(tmp_path: Path, answer: bytes) -> tuple[bytes, int]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    work = tmp_path / "work"
    work.mkdir()
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [ironhive_executable(), "--provider", "scripted", "-m", str(script), "-p", "write notes", "--plain"],
        cwd=work,
        env=clean_environment(tmp_path),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        close_fds=True,
    )
    os.close(terminal)
    try:
        shown = read_until(controller, b"> ")
        os.write(controller, answer)
        shown += read_until(controller, b"\n", timeout=30)
        code = process.wait(timeout=30)
        try:
            while select.select([controller], [], [], 0.2)[0]:
                chunk = os.read(controller, 4096)
                if not chunk:
                    break
                shown += chunk
        except OSError:
            pass
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    return shown, code


def test_approve_once_runs_the_call(tmp_path: Path) -> None:
    shown, code = run_on_terminal(tmp_path, b"y\n")
    assert code == 0
    assert b"Allow this operation?" in shown or b"Write file: notes.md" in shown
    assert (tmp_path / "work" / "notes.md").read_text() == "hello"
    assert b"Finished." in shown


@pytest.mark.parametrize(("answer", "expected"), [(b"n\n", b"User rejected"), (b"s\n", b"User rejected and stopped")])
def test_rejection_leaves_the_disk_alone(tmp_path: Path, answer: bytes, expected: bytes) -> None:
    shown, code = run_on_terminal(tmp_path, answer)
    assert code == 0
    assert expected in shown
    assert not (tmp_path / "work" / "notes.md").exists()
