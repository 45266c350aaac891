"""``ironhive sessions [list|delete <ID>]`` in a real process, over sessions seeded into a temporary HOME."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from ironhive.adapters.sessions.store import DiskCacheSessionStore
from ironhive.ports.chat import ChatMessage, Role
from tests.adapters.sessions.conversation import CountingIds, text_turn, tool_turn
from tests.support.cli import run_ironhive
from tests.support.fakes import FakeClock
from tests.support.terminal import terminal

UTC_ENV = {"TZ": "UTC"}
LONG_PROMPT = "Refactor the parser\nso that " + "every token keeps its position; " * 5


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def store_for(home: Path, workspace: Path, clock: FakeClock | None = None) -> DiskCacheSessionStore:
    return DiskCacheSessionStore(home / ".ironhive", workspace, clock=clock or FakeClock(), ids=CountingIds(0xA1B2C3D0))


async def seed(home: Path, workspace: Path) -> list[str]:
    """Four sessions: ended with a tool turn, empty, failed with a long prompt, and a fork of the first."""
    clock = FakeClock(start=datetime(2026, 8, 31, tzinfo=UTC))
    store = store_for(home, workspace, clock)
    first = await store.create("gpt-4o")
    await store.append_turn(first.id, tool_turn())
    await store.append_turn(first.id, text_turn("Thanks!", "You're welcome."))
    await store.end(first.id, "completed")
    clock.advance(90.123456)
    empty = await store.create("claude-sonnet-4")
    clock.advance(86400)
    failed = await store.create("local/smollm2")
    await store.append_turn(failed.id, (ChatMessage.of_text(Role.USER, LONG_PROMPT),))
    await store.end(failed.id, "error")
    clock.advance(3600)
    fork = await store.fork(first.id)
    return [first.id, empty.id, failed.id, fork.id]


def sessions(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_ironhive("sessions", *args, cwd=cwd, home=home, env=UTC_ENV)


def test_list_json_of_every_kind_of_session(tmp_path: Path, workspace: Path, snapshot: SnapshotAssertion) -> None:
    ids = asyncio.run(seed(tmp_path, workspace))
    completed = sessions("list", "--output", "json", home=tmp_path, cwd=workspace)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == snapshot
    listed = json.loads(completed.stdout)
    assert [entry["id"] for entry in listed] == [ids[3], ids[2], ids[1], ids[0]]
    assert "firstMessage" not in listed[2]
    assert len(listed[1]["firstMessage"]) == 100


def test_list_json_honours_the_limit_and_an_unknown_action_is_a_usage_error(
    tmp_path: Path, workspace: Path, snapshot: SnapshotAssertion
) -> None:
    asyncio.run(seed(tmp_path, workspace))
    limited = sessions("list", "-o", "json", "-n", "2", home=tmp_path, cwd=workspace)
    assert limited.returncode == 0, limited.stderr
    assert limited.stdout == snapshot
    unknown = sessions("dlete", "x", "-o", "json", home=tmp_path, cwd=workspace)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert unknown.stderr.startswith('Error: Invalid value "dlete" for ACTION. Choose from: "list", "delete".')


def test_list_json_without_sessions_is_an_empty_array(tmp_path: Path, workspace: Path) -> None:
    completed = sessions("list", "-o", "json", home=tmp_path, cwd=workspace)
    assert (completed.returncode, completed.stdout) == (0, "[]\n")
    assert not (tmp_path / ".ironhive" / "projects").exists()  # listing created nothing
    text = sessions(home=tmp_path, cwd=workspace)
    assert (text.returncode, text.stdout) == (0, "No sessions found.\n")


def test_list_text_is_an_aligned_table_when_piped(tmp_path: Path, workspace: Path, snapshot: SnapshotAssertion) -> None:
    asyncio.run(seed(tmp_path, workspace))
    completed = sessions(home=tmp_path, cwd=workspace)  # no action: list
    assert completed.returncode == 0, completed.stderr
    assert "\x1b[" not in completed.stdout
    assert completed.stdout == snapshot


def test_sessions_belong_to_the_current_project(tmp_path: Path, workspace: Path) -> None:
    asyncio.run(seed(tmp_path, workspace))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = sessions("list", "-o", "json", home=tmp_path, cwd=elsewhere)
    assert (completed.returncode, completed.stdout) == (0, "[]\n")


def test_delete_json_outputs(tmp_path: Path, workspace: Path, snapshot: SnapshotAssertion) -> None:
    ids = asyncio.run(seed(tmp_path, workspace))
    missing = sessions("delete", "-o", "json", home=tmp_path, cwd=workspace)
    unknown = sessions("delete", "0000-deadbeef", "-o", "json", home=tmp_path, cwd=workspace)
    deleted = sessions("delete", ids[0], "-o", "json", home=tmp_path, cwd=workspace)
    again = sessions("delete", ids[0], "--output", "json", home=tmp_path, cwd=workspace)
    outputs = {
        "missing": (missing.returncode, missing.stdout),
        "unknown": (unknown.returncode, unknown.stdout),
        "deleted": (deleted.returncode, deleted.stdout),
        "again": (again.returncode, again.stdout),
    }
    assert outputs == snapshot
    assert outputs["deleted"] == (0, f'{{"deleted":"{ids[0]}","success":true}}\n')
    assert outputs["missing"] == (1, '{"error":"Session ID required","code":1}\n')
    remaining = json.loads(sessions("list", "-o", "json", home=tmp_path, cwd=workspace).stdout)
    assert [entry["id"] for entry in remaining] == [ids[3], ids[2], ids[1]]


def test_delete_text_needs_a_terminal_or_yes(tmp_path: Path, workspace: Path) -> None:
    ids = asyncio.run(seed(tmp_path, workspace))
    refused = sessions("delete", ids[1], home=tmp_path, cwd=workspace)
    assert refused.returncode == 1
    assert "--yes" in refused.stderr
    assert refused.stdout == ""
    assert ids[1] in sessions("list", "-o", "json", home=tmp_path, cwd=workspace).stdout

    confirmed = sessions("delete", ids[1], "--yes", home=tmp_path, cwd=workspace)
    assert (confirmed.returncode, confirmed.stdout) == (0, f"Deleted session {ids[1]}\n")
    assert ids[1] not in sessions("list", "-o", "json", home=tmp_path, cwd=workspace).stdout

    missing = sessions("delete", home=tmp_path, cwd=workspace)
    assert (missing.returncode, missing.stderr) == (1, "Error: Session ID required\n")
    unknown = sessions("delete", ids[1], "-y", home=tmp_path, cwd=workspace)
    assert (unknown.returncode, unknown.stderr) == (1, f"Error: Session not found: {ids[1]}\n")


def delete_on_terminal(home: Path, workspace: Path, session_id: str, answer: bytes) -> tuple[bytes, int]:
    with terminal(workspace, "sessions", "delete", session_id, home=home, env=UTC_ENV) as term:
        term.read_until(b"[y/N] ", timeout=30)
        term.send(answer)
        code = term.wait(timeout=30)
        return term.seen, code


@pytest.mark.parametrize(("answer", "kept"), [(b"\n", True), (b"n\n", True), (b"y\n", False)], ids=["enter", "n", "y"])
def test_delete_on_a_terminal_asks_and_defaults_to_no(
    tmp_path: Path, workspace: Path, answer: bytes, kept: bool
) -> None:
    ids = asyncio.run(seed(tmp_path, workspace))
    shown, code = delete_on_terminal(tmp_path, workspace, ids[2], answer)
    assert code == 0
    assert f"Delete session {ids[2]}? [y/N]".encode() in shown
    assert (b"Cancelled." in shown) is kept
    remaining = [info.id for info in asyncio.run(store_for(tmp_path, workspace).list(10))]
    assert (ids[2] in remaining) is kept


def test_list_on_a_terminal_is_a_rich_table(tmp_path: Path, workspace: Path) -> None:
    ids = asyncio.run(seed(tmp_path, workspace))
    with terminal(workspace, "sessions", "list", home=tmp_path, env=UTC_ENV, columns=160) as term:
        assert term.wait(timeout=30) == 0
        shown = term.seen
    text = shown.decode()
    assert "Sessions" in text
    assert "┃" in text or "│" in text  # box drawing: rich drew the table
    assert all(session_id in text for session_id in ids)
