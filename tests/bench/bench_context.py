"""Context preparation cost on a 1,000,000-token history: median prepare time, peak memory, estimation throughput."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import tracemalloc

import pytest

from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager, PreparedContext
from ironhive.domain.context.tokens import DEFAULT_COUNTER, count_messages
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import ChatMessage, Role, TextPart, ToolResultPart

HISTORY_TOKENS = 1_000_000
RUNS = 7
SCENARIOS: dict[str, tuple[int, CompactionConfig]] = {
    "200k window": (200_000, CompactionConfig()),
    "32k window": (32_768, CompactionConfig()),
    "128k window, no masking": (128_000, CompactionConfig(enable_observation_masking=False)),
    "32k window, anchored": (32_768, CompactionConfig(use_anchored_compaction=True)),
}


def _lines(seed: int, chars: int) -> str:
    line = f"src/module_{seed % 97}.py:{seed % 1000}: def handler_{seed}(request, context): return process(request)\n"
    return (line * (chars // len(line) + 1))[:chars]


def make_turn(index: int) -> list[ChatMessage]:
    """One turn: a request, a round of two calls (every 4th result 40,000 chars), three small rounds, an answer."""
    big = 40_000 if index % 4 == 0 else 1_500
    calls = (
        make_tool_call(f"g{index}", "grep_files", json.dumps({"pattern": f"handler_{index}", "path": "src"})),
        make_tool_call(f"s{index}", "shell", json.dumps({"command": f"pytest tests/test_{index}.py -q"})),
    )
    results = (
        ToolResultPart(call_id=f"g{index}", name="grep_files", result=_lines(index, 8_000), success=True),
        ToolResultPart(call_id=f"s{index}", name="shell", result=_lines(index + 1, big), success=index % 7 != 0),
    )
    small_rounds: list[ChatMessage] = []
    for step in range(3):
        call_id = f"r{index}_{step}"
        arguments = json.dumps({"path": f"src/module_{index}_{step}.py"})
        small_rounds += [
            ChatMessage(role=Role.ASSISTANT, parts=(make_tool_call(call_id, "read_file", arguments),)),
            ChatMessage(
                role=Role.TOOL,
                parts=(ToolResultPart(call_id=call_id, name="read_file", result=_lines(step, 300), success=True),),
            ),
        ]
    return [
        ChatMessage.of_text(Role.USER, f"Step {index}: fix the failing handler_{index} and keep the API stable. " * 4),
        ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Let me look at the code first."), *calls)),
        ChatMessage(role=Role.TOOL, parts=results),
        *small_rounds,
        ChatMessage.of_text(Role.ASSISTANT, f"Fixed handler_{index}; the tests pass. " * 30),
    ]


def make_history(tokens: int = HISTORY_TOKENS) -> list[ChatMessage]:
    """A conversation of at least ``tokens`` estimated tokens."""
    history = [ChatMessage.of_text(Role.SYSTEM, "You are a careful coding agent. " * 40)]
    index = 0
    while count_messages(history, DEFAULT_COUNTER) < tokens:
        history.extend(make_turn(index))
        index += 1
    return history


async def measure_scenario(
    history: list[ChatMessage], window: int, config: CompactionConfig, runs: int
) -> dict[str, float]:
    cold: list[float] = []
    prepared: PreparedContext | None = None
    for _ in range(runs):
        manager = ContextManager(config, window=window)
        started = time.perf_counter()
        prepared = await manager.prepare(history)
        cold.append(time.perf_counter() - started)
    assert prepared is not None

    # Steady state: one manager per session, the history growing by a turn before every call.
    manager = ContextManager(config, window=window)
    growing = list(history)
    await manager.prepare(growing)
    warm: list[float] = []
    for turn in range(runs):
        growing.extend(make_turn(100_000 + turn))
        started = time.perf_counter()
        await manager.prepare(growing)
        warm.append(time.perf_counter() - started)

    tracemalloc.start()
    await ContextManager(config, window=window).prepare(history)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "window": window,
        "prepared tokens": prepared.tokens,
        "prepared messages": len(prepared.messages),
        "compacted": 1.0 if prepared.report is not None else 0.0,
        "cold median ms": statistics.median(cold) * 1000,
        "warm median ms": statistics.median(warm) * 1000,
        "cold peak MiB": peak / 2**20,
    }


def measure(runs: int = RUNS) -> dict[str, dict[str, float]]:
    history = make_history()
    text_chars = sum(
        len(part.result) if isinstance(part, ToolResultPart) else len(getattr(part, "text", ""))
        for message in history
        for part in message.parts
    )
    started = time.perf_counter()
    for _ in range(runs):
        tokens = count_messages(history, DEFAULT_COUNTER)
    per_count = (time.perf_counter() - started) / runs
    figures: dict[str, dict[str, float]] = {
        "history": {
            "messages": len(history),
            "tokens": tokens,
            "uncached count ms": per_count * 1000,
            "estimation MB/s": text_chars / per_count / 1e6,
        }
    }
    for name, (window, config) in SCENARIOS.items():
        figures[name] = asyncio.run(measure_scenario(history, window, config, runs))
    return figures


def report(figures: dict[str, dict[str, float]]) -> str:
    lines = [f"context preparation on a {HISTORY_TOKENS:,}-token history (median of {RUNS} runs)"]
    for section, values in figures.items():
        lines.append(f"[{section}]")
        lines += [f"  {name:<24} {value:14,.1f}" for name, value in values.items()]
    return "\n".join(lines)


@pytest.mark.bench
def test_context_preparation_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    assert figures["history"]["tokens"] >= HISTORY_TOKENS
    for name in SCENARIOS:
        assert figures[name]["prepared tokens"] <= figures[name]["window"]


if __name__ == "__main__":
    print(report(measure()))
