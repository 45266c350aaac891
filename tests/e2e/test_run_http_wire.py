"""The HTTP runner's wire, pinned: the real ``ironhive run --http`` against a loopback host — the ``ready`` body, each
inbox connection's ``Last-Event-ID`` (a dropped stream resumes after the last request read) and every ``/events`` POST
body (one event object per POST), through a plain turn, an approval and shutdown."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from jsonschema import Draft202012Validator
from syrupy.assertion import SnapshotAssertion

from ironhive.protocol.schema import published_schema_json
from tests.support.agent_host import LoopbackAgentHost
from tests.support.cli import clean_environment, ironhive_executable

SID = "wire-session"
TIMEOUT = 30.0
SCRIPT = {
    "steps": [
        {"text": "Hello there.", "usage": {"input_tokens": 10, "output_tokens": 3}},
        {
            "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "x"}, "id": "call_w"}],
            "usage": {"input_tokens": 20, "output_tokens": 4},
        },
        {"text": "Saved.", "usage": {"input_tokens": 30, "output_tokens": 2}},
    ]
}


async def test_ready_inbox_and_event_posts_of_a_session(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    async with LoopbackAgentHost() as host:
        record = host.agent(SID)
        process = await asyncio.create_subprocess_exec(
            ironhive_executable(),
            "run",
            "--http",
            host.base_url,
            "--session-id",
            SID,
            "--provider",
            "scripted",
            "-m",
            str(tmp_path / "script.json"),
            cwd=work,
            env=clean_environment(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            await host.wait_until(lambda: len(record.inbox_last_event_ids) == 1, TIMEOUT)
            await host.send(SID, {"type": "user_message", "content": "Hi"})
            await host.wait_for_turn_ends(SID, 1, TIMEOUT)
            await host.drop_inbox(SID)  # the agent reconnects with the id of the last request it read
            await host.wait_until(lambda: len(record.inbox_last_event_ids) == 2, TIMEOUT)
            await host.send(SID, {"type": "user_message", "content": "Write notes."})
            events = await host.wait_for_events(SID, lambda seen: seen[-1]["type"] == "hitl_request", TIMEOUT)
            hitl_id = events[-1]["id"]
            await host.send(SID, {"type": "hitl_response", "approved": True, "id": hitl_id})
            await host.wait_for_turn_ends(SID, 2, TIMEOUT)
            await host.send(SID, {"type": "shutdown"})
            _, stderr = await asyncio.wait_for(process.communicate(), TIMEOUT)
        finally:
            if process.returncode is None:
                process.kill()
                await process.communicate()
    assert process.returncode == 0, stderr.decode()
    wire = "\n".join(
        [
            *(f"POST /api/agent/{SID}/ready {json.dumps(body, separators=(',', ':'))}" for body in record.ready_bodies),
            *(f"GET /api/agent/{SID}/inbox Last-Event-ID: {last or '(none)'}" for last in record.inbox_last_event_ids),
            *(f"POST /api/agent/{SID}/events {post.status} {post.body}" for post in record.event_posts),
        ]
    )
    assert wire.count(hitl_id) == 1
    schema = json.loads(published_schema_json())
    validator = Draft202012Validator({**schema, "anyOf": [{"$ref": "#/$defs/Event"}]})
    assert [
        error.message for post in record.event_posts for error in validator.iter_errors(json.loads(post.body))
    ] == []
    assert wire.replace(hitl_id, "<hitl-id>") + "\n" == snapshot
