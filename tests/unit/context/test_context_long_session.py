"""A 200-turn session on an 8,192-token window: every request fits, the history is untouched, the user's first
constraint and latest request are always sent."""

from __future__ import annotations

import json

import pytest

from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.tokens import DEFAULT_COUNTER, count_messages
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import ChatMessage, Role, TextPart, ToolResultPart

WINDOW = 8192
CONSTRAINT = "Never touch the tests/ folder"


def request(turn: int) -> str:
    if turn == 0:
        return f"{CONSTRAINT}. Migrate the project from setup.py to pyproject.toml, module by module."
    return f"Turn {turn}: now migrate module_{turn}.py and check that it still imports."


def make_turn(turn: int) -> list[ChatMessage]:
    body = "\n".join(f"module_{turn}.py:{line}: " + "code " * 14 for line in range(600))[:40_000]
    calls = (
        make_tool_call(f"r{turn}", "read_file", json.dumps({"path": f"src/module_{turn}.py"})),
        make_tool_call(f"s{turn}", "shell", json.dumps({"command": f"python -m module_{turn}"})),
    )
    return [
        ChatMessage.of_text(Role.USER, request(turn)),
        ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Looking at it."), *calls)),
        ChatMessage(
            role=Role.TOOL,
            parts=(
                ToolResultPart(call_id=f"r{turn}", name="read_file", result=body, success=True),
                ToolResultPart(call_id=f"s{turn}", name="shell", result=body[::-1], success=turn % 5 != 0),
            ),
        ),
        ChatMessage.of_text(Role.ASSISTANT, f"Module {turn} migrated; it imports cleanly."),
    ]


async def summarise(messages: object, target_tokens: int) -> str:
    return "Earlier turns migrated modules one by one. " * 200  # ignores its budget on purpose


@pytest.mark.parametrize(
    ("config", "summarizer"),
    [
        (CompactionConfig(), None),
        (CompactionConfig(use_anchored_compaction=True), summarise),
        (CompactionConfig(enable_observation_masking=False, use_token_based_compaction=False), None),
    ],
    ids=["default", "anchored-with-summary", "legacy-threshold-no-masking"],
)
async def test_every_request_of_a_long_session_fits_and_keeps_the_users_words(
    config: CompactionConfig, summarizer: object
) -> None:
    manager = ContextManager(config, window=WINDOW, summarizer=summarizer)  # type: ignore[arg-type]
    history = [ChatMessage.of_text(Role.SYSTEM, "You are a careful coding agent.")]
    compacted = 0
    for turn in range(200):
        history += make_turn(turn)
        snapshot = list(history)
        prepared = await manager.prepare(history)
        assert history == snapshot, f"turn {turn}: the caller's history changed"
        tokens = count_messages(prepared.messages, DEFAULT_COUNTER)
        assert tokens == prepared.tokens <= WINDOW, f"turn {turn}: {tokens} tokens"
        sent = [message.text for message in prepared.messages if message.role is Role.USER]
        assert any(CONSTRAINT in text for text in sent), f"turn {turn}: the first constraint was lost"
        assert request(turn) in sent, f"turn {turn}: the latest request was lost"
        compacted += prepared.report is not None
    assert compacted > 150
    assert all(len(part.result) >= 39_000 for message in history for part in message.tool_results)
