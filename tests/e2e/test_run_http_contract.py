"""The real ``ironhive run --http`` against a recording loopback host: the turn-stream fixes of issue 16 over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_host import LoopbackAgentHost
from tests.support.cli import clean_environment, ironhive_executable, run_ironhive

TIMEOUT = 30.0
Json = dict[str, Any]


@pytest.fixture
async def host() -> AsyncIterator[LoopbackAgentHost]:
    async with LoopbackAgentHost() as running:
        yield running


@contextlib.asynccontextmanager
async def agent(host: LoopbackAgentHost, work: Path, steps: list[Json], *flags: str) -> AsyncIterator[Any]:
    """``ironhive run --http`` on the scripted model; killed on the way out if it is still running."""
    script = work.parent / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    process = await asyncio.create_subprocess_exec(
        ironhive_executable(), "run", "--http", host.base_url, *flags, "--provider", "scripted", "-m", str(script),
        cwd=work, env=clean_environment(work.parent / "home"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.communicate()


async def test_d1_d2_a_wrong_typed_message_ends_its_turn_and_every_event_is_posted_as_one_object(
    host: LoopbackAgentHost, work: Path
) -> None:
    sid = "http-contract-1"
    steps: list[Json] = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "c1"}]},
        {"deltas": ["o", "k"]},
    ]
    (work / "a.txt").write_text("alpha\n")
    async with agent(host, work, steps, "--session-id", sid) as process:
        await host.wait_until(lambda: bool(host.agent(sid).ready_bodies), within=TIMEOUT)
        await host.send(sid, '{"type":"user_message","content":"x","options":{"max_output_tokens":"many"}}')
        await host.send(sid, '{"type":"user_message","content":"read a","options":{"max_output_tokens":512.0}}')
        await host.wait_for_turn_ends(sid, 2, within=TIMEOUT)
        await host.send(sid, {"type": "shutdown"})
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
    record = host.agent(sid)
    assert all(isinstance(body, dict) for body in record.bodies)  # never an array: one event per POST
    assert len(record.bodies) == len(record.events)
    assert record.events[:2] == [
        {
            "type": "error",
            "message": "Invalid user_message: options.max_output_tokens: Input should be a valid integer",
        },
        {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None},
    ]
    assert record.events[2] == {"type": "tool_start", "tool": "read_file", "input": {"path": "a.txt"}, "call_id": "c1"}
    assert record.event_types[-1] == "turn_end" and "error" not in record.event_types[2:]


async def test_a_generated_session_id_is_sortable_and_the_session_is_ended_after_shutdown(
    host: LoopbackAgentHost, work: Path
) -> None:
    async with agent(host, work, [{"text": "hi"}]) as process:
        ready: list[str] = []

        def announced() -> bool:
            ready[:] = [sid for sid in host.agent_ids if host.agent(sid).ready_bodies]
            return bool(ready)

        await host.wait_until(announced, within=TIMEOUT)
        [sid] = ready
        await host.send(sid, {"type": "user_message", "content": "hello"})
        await host.wait_for_turn_ends(sid, 1, within=TIMEOUT)
        await host.send(sid, {"type": "shutdown"})
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
    assert re.fullmatch(r"[0-9a-f]+-[0-9a-f]{8}", sid)
    listed = run_ironhive("sessions", "-o", "json", cwd=work, home=work.parent / "home")
    [stored] = json.loads(listed.stdout)
    assert (stored["id"], stored["status"], stored["messageCount"]) == (sid, "ended", 2)


async def test_d4_d6_over_http_the_retry_notice_is_posted_before_the_wait_and_contradicting_options_are_refused(
    host: LoopbackAgentHost, work: Path
) -> None:
    sid = "http-contract-2"
    busy = {"error": {"message": "The model is busy.", "status": 503, "retryable": True}}
    async with agent(host, work, [busy, {"text": "Answered."}], "--session-id", sid) as process:
        await host.wait_until(lambda: bool(host.agent(sid).ready_bodies), within=TIMEOUT)
        options = {"tool_names": ["read_file"], "tool_mode": "require:write_file"}
        await host.send(sid, {"type": "user_message", "content": "go", "options": options})
        await host.send(sid, {"type": "user_message", "content": "hi"})
        await host.wait_for_turn_ends(sid, 2, within=TIMEOUT)
        await host.send(sid, {"type": "shutdown"})
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0
    record = host.agent(sid)
    refused, answered = record.events[:2], record.events[2:]
    assert refused == [
        {
            "type": "error",
            "message": "Tool mode 'require:write_file' requires a tool this turn does not offer: tool_names are "
            "read_file. Add it to tool_names or choose another mode.",
        },
        {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None},
    ]
    assert answered[0]["type"] == "fallback" and answered[0]["message"] == "The model is busy. — retrying in 1s"
    posts = [post for post in record.event_posts if 200 <= post.status < 300]
    notice_at = next(post.at for post in posts if json.loads(post.body)["type"] == "fallback")
    text_at = next(post.at for post in posts if json.loads(post.body)["type"] == "text_delta")
    assert text_at - notice_at >= 0.7  # the host had the notice before the 1 s wait, not with the answer after it
    assert "exhausted" not in [event.get("kind") for event in answered]
