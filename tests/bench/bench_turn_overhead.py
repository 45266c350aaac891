"""Per-turn overhead of the agent loop with ScriptedChatClient (no I/O): turns per second, 1 round and 5 tool rounds."""

from __future__ import annotations

import asyncio
import time

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.invocation.guards import (
    ArgumentParseFailureMiddleware,
    RepeatedCallGuardMiddleware,
    RepeatedErrorGuardMiddleware,
)
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline
from ironhive.domain.invocation.resilient import ResilientArgumentsMiddleware
from ironhive.ports.chat import Usage
from tests.support.fakes import FakeClock, RecordingTool

PIPELINE = ToolInvocationPipeline(
    [
        ArgumentParseFailureMiddleware(),
        RepeatedCallGuardMiddleware(),
        RepeatedErrorGuardMiddleware(),
        ResilientArgumentsMiddleware(),
    ]
)


def steps(tool_rounds: int) -> list[ScriptStep]:
    rounds = [
        ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments={"n": i}),), usage=Usage(input_tokens=10))
        for i in range(tool_rounds)
    ]
    return [*rounds, ScriptStep(text="All done, here is the answer.", usage=Usage(input_tokens=10, output_tokens=5))]


async def turns_per_second(tool_rounds: int, turns: int, *, streaming: bool) -> float:
    tool = RecordingTool("echo")
    script = steps(tool_rounds)
    started = time.perf_counter()
    for _ in range(turns):
        loop = AgentLoop(ScriptedChatClient(script), clock=FakeClock(), tools=[tool], pipeline=PIPELINE)
        if streaming:
            async for _chunk in loop.run_streaming("go"):
                pass
        else:
            await loop.run("go")
    return turns / (time.perf_counter() - started)


def measure(turns: int = 2000) -> dict[str, float]:
    return {
        f"{label} {mode}": asyncio.run(turns_per_second(rounds, turns, streaming=mode == "streaming"))
        for label, rounds in (("1-round turn", 0), ("5-tool-round turn", 5))
        for mode in ("streaming", "non-streaming")
    }


def report(figures: dict[str, float]) -> str:
    return "\n".join(
        ["per-turn overhead (ScriptedChatClient, no I/O)"]
        + [f"{name:<32} {rate:10.0f} turns/s  ({1e6 / rate:7.1f} µs/turn)" for name, rate in figures.items()]
    )


@pytest.mark.bench
def test_turn_overhead_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    assert figures["1-round turn streaming"] > figures["5-tool-round turn streaming"]


if __name__ == "__main__":
    print(report(measure()))
