"""A client that floods ``ironhive run --server`` with big messages: refused in order, memory bounded, still served."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from tests.support.server_process import Event, ServerProcess

MESSAGES = 200
MESSAGE_BYTES = 1024 * 1024
RSS_LIMIT_KB = 300 * 1024
QUEUE_FULL = "The turn queue is full"


def rss_kb(pid: int) -> int:
    """The process's resident set size in kB (VmRSS of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def test_a_flood_of_big_messages_is_refused_in_order_and_memory_stays_bounded(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    script = tmp_path / "script.json"
    # The first turn waits for an approval while the flood arrives: the slowest turn there is.
    steps = [
        {"tool_calls": [{"name": "execute_command", "arguments": {"command": "echo flood-over"}, "id": "c1"}]},
        {"text": "first done"},
        {"text": "ok"},
    ]
    script.write_text(json.dumps({"steps": steps, "repeat_last": True}))
    big = (json.dumps({"type": "user_message", "content": "x" * MESSAGE_BYTES}) + "\n").encode()
    with ServerProcess("--provider", "scripted", "-m", str(script), cwd=work, home=home) as server:
        pid = server.process.pid
        assert server.next_event()["type"] == "session_started"
        server.user_message("start")
        request = server.events_until("hitl_request")[-1]
        baseline = rss_kb(pid)
        written = threading.Event()
        failure: list[BaseException] = []

        def flood() -> None:
            try:
                for _ in range(MESSAGES):
                    server.send_raw(big)
                # Not a user_message: it must get through whatever is queued.
                server.send({"type": "hitl_response", "approved": True, "id": request["id"]})
            except BaseException as error:  # reported by the test thread
                failure.append(error)
            finally:
                written.set()

        writer = threading.Thread(target=flood, name="flooding-client", daemon=True)
        writer.start()
        peak = baseline
        deadline = time.monotonic() + 120
        while not written.is_set() and time.monotonic() < deadline:
            peak = max(peak, rss_kb(pid))
            time.sleep(0.02)
        writer.join(timeout=5)
        assert written.is_set() and not failure, failure
        first = server.read_turn(timeout=30)
        later: list[list[Event]] = []
        for _ in range(MESSAGES):
            later.append(server.read_turn(timeout=60))
            peak = max(peak, rss_kb(pid))
        server.user_message("still there?")
        after = server.read_turn(timeout=30)
    assert first[0]["type"] == "tool_end" and first[0]["success"] is True
    assert "flood-over" in first[0]["output"]
    refused = [turn for turn in later if turn[0]["type"] == "error"]
    served = [turn for turn in later if turn[0]["type"] != "error"]
    assert refused and served, "some messages wait, the rest are refused"
    assert len(refused) + len(served) == MESSAGES  # every message got its own turn_end
    for turn in refused:
        assert len(turn) == 2 and turn[0]["message"].startswith(QUEUE_FULL) and turn[1]["type"] == "turn_end"
    assert all(turn[0]["type"] == "text_delta" for turn in served)
    assert later.index(refused[0]) == len(served)  # in order: the queued ones first, then the refusals
    assert peak < RSS_LIMIT_KB, f"RSS peaked at {peak} kB (baseline {baseline} kB)"
    assert "".join(event["content"] for event in after if event["type"] == "text_delta") == "ok"
