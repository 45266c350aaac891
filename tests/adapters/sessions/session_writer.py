"""A separate process that writes turns to a DiskCacheSessionStore, for the durability and concurrency tests.

Usage: ``python session_writer.py BASE_DIR PROJECT_DIR TURNS`` (TURNS 0 = until killed). It creates a session, prints
``session <id>`` and ``ready``, waits for a line on stdin, then appends turns, printing ``wrote <n>`` after each one is
stored, and ``done`` at the end.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path

from ironhive.adapters.sessions.store import DiskCacheSessionStore
from ironhive.ports.chat import ChatMessage, Role, ToolCallPart, ToolResultPart


def turn_messages(session_id: str, number: int) -> tuple[ChatMessage, ...]:
    """The messages of turn ``number``; large enough that a write takes a moment."""
    return (
        ChatMessage.of_text(Role.USER, f"{session_id} question {number}"),
        ChatMessage(
            role=Role.ASSISTANT,
            parts=(ToolCallPart(call_id=f"c{number}", name="read_file", arguments={"path": f"f{number}.txt"}),),
        ),
        ChatMessage(
            role=Role.TOOL,
            parts=(ToolResultPart(call_id=f"c{number}", name="read_file", result="x" * 20_000, success=True),),
        ),
        ChatMessage.of_text(Role.ASSISTANT, f"{session_id} answer {number}"),
    )


async def main(base_dir: Path, project: Path, turns: int) -> None:
    store = DiskCacheSessionStore(base_dir, project)
    session = await store.create("writer")
    print(f"session {session.id}", flush=True)
    print("ready", flush=True)
    sys.stdin.readline()
    numbers = itertools.count() if turns == 0 else range(turns)
    for number in numbers:
        await store.append_turn(session.id, turn_messages(session.id, number))
        print(f"wrote {number}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])))
