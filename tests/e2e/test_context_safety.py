"""Context safety end to end: a 200-turn session never overflows an 8,192-token window, overflow errors teach the
window, and compaction is visible on the jsonl output."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.context.budget import TokenBudgetChatClient
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.tokens import DEFAULT_COUNTER, count_messages
from ironhive.domain.turn import ContextCompactedChunk
from ironhive.ports.chat import JsonValue, ToolSpec
from tests.support.cli import run_ironhive
from tests.support.fakes import FakeClock
from tests.support.openai_server import (
    ErrorReply,
    LoopbackOpenAIServer,
    ScriptedCall,
    TextReply,
    ToolCallsReply,
    error_body,
)

WINDOW = 8192
CONSTRAINT = "Never touch the tests/ folder and answer in French."


class LogTool:
    """Returns 40,000 characters of log per call."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name="fetch_logs", description="Fetch logs.", parameters={"type": "object", "properties": {}})

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        return "\n".join(f"2026-01-01T00:00:00Z INFO line {i:05d} " + "x" * 60 for i in range(500))[:40_000]


async def test_two_hundred_turns_never_exceed_the_window() -> None:
    steps: list[ScriptStep] = []
    for turn in range(200):
        steps.append(ScriptStep(tool_calls=(ScriptedToolCall(name="fetch_logs", arguments={"turn": turn}),)))
        steps.append(ScriptStep(text=f"Turn {turn}: the logs look fine."))
    client = ScriptedChatClient(steps)
    loop = AgentLoop(
        TokenBudgetChatClient(client, window=WINDOW, threshold=1.0),
        clock=FakeClock(),
        tools=[LogTool()],
        system_prompt="You are a careful agent.",
        context=ContextManager(CompactionConfig(), window=WINDOW),
    )
    compactions = 0
    for turn in range(200):
        prompt = (
            f"Turn {turn}: check the logs again. {CONSTRAINT}" if turn == 0 else f"Current goal {turn}: check the logs"
        )
        async for chunk in loop.run_streaming(prompt):
            compactions += isinstance(chunk, ContextCompactedChunk)
    assert len(client.requests) == 400
    for number, request in enumerate(client.requests):
        sent = request.messages
        assert count_messages(sent, DEFAULT_COUNTER) <= WINDOW, f"request {number} exceeds the window"
        texts = "\n".join(message.text for message in sent)
        assert CONSTRAINT in texts, f"request {number} lost the user's constraint"
        assert f"Current goal {number // 2}:" in texts or number < 2, f"request {number} lost the current goal"
    assert compactions > 0
    history = loop.history
    assert len(history) == 200 * 4  # user, assistant call, tool result, answer — nothing dropped
    assert all(len(part.result) == 40_000 for message in history for part in message.tool_results)


async def test_an_overflow_error_teaches_the_window_and_later_turns_compact_first() -> None:
    limit_tokens = 2500
    overflows: list[int] = []

    def reply(body: dict[str, Any]) -> TextReply | ToolCallsReply | ErrorReply:
        size = sum(len(json.dumps(message)) for message in body["messages"]) // 4
        if size > limit_tokens:
            overflows.append(size)
            message = (
                f"This model's maximum context length is {limit_tokens} tokens. However, your messages resulted in "
                f"{size} tokens. Please reduce the length of the messages."
            )
            code = "context_length_exceeded"
            return ErrorReply(
                status=400, body=error_body(message, "invalid_request_error", param="messages", code=code)
            )
        # The goal reminder is a user message after the tool results, so look for a tool result in this turn.
        tail = []
        for message in reversed(body["messages"]):
            if message["role"] == "user" and not message["content"].startswith("[REMINDER]"):
                break
            tail.append(message)
        if not any(message["role"] == "tool" for message in tail):
            call = ScriptedCall(call_id=f"c{len(body['messages'])}", name="fetch_logs", arguments={})
            return ToolCallsReply(calls=[call])
        return TextReply(text="Looked at them.")

    with LoopbackOpenAIServer() as server:
        for _ in range(20):
            server.enqueue_function(reply)
        client = OpenAIChatClient(api_key="sk-test", model="unknown-model", base_url=server.base_url)
        context = ContextManager(CompactionConfig(), window=None)
        loop = AgentLoop(client, clock=FakeClock(), tools=[LogTool()], context=context)
        turns = [await loop.run(f"Turn {n}: read the logs") for n in range(4)]
        await client.aclose()
    assert [turn.content for turn in turns] == ["Looked at them."] * 4
    assert len(overflows) == 1  # only the first overflow; afterwards requests are compacted before sending
    assert context.learned_window is not None and context.learned_window <= limit_tokens


def test_compaction_is_visible_on_the_jsonl_output(tmp_path: Path) -> None:
    big = "y" * 9000
    script = {
        "context_size": 2048,
        "steps": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}, "id": "c1"}]},
            {"text": "Read it."},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt", "start_line": 1}, "id": "c2"}]},
            {"text": "Read it again."},
        ],
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    work = tmp_path / "work"
    work.mkdir()
    (work / "big.txt").write_text(big)
    completed = run_ironhive(
        "--provider",
        "scripted",
        "-m",
        str(tmp_path / "script.json"),
        "-p",
        "Read big.txt twice",
        "-o",
        "jsonl",
        cwd=work,
        home=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    compacted = [line for line in lines if line["type"] == "context_compacted"]
    assert compacted, completed.stdout
    first = compacted[0]
    assert set(first) == {"type", "tokensBefore", "tokensAfter", "messagesSummarized", "messagesDropped", "summaryUsed"}
    assert first["tokensAfter"] <= 2048 < first["tokensBefore"]
    assert lines[-1]["type"] == "done"
