"""Added latency of the adapter layer: OpenAIChatClient against the bare openai SDK call on the same loopback server."""

from __future__ import annotations

import asyncio
import statistics
import time

import openai
import pytest

from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.ports.chat import ChatMessage, ChatOptions, Role
from tests.support.openai_server import LoopbackOpenAIServer, TextReply

RUNS = 40
CHUNKS = [f"word{i} " for i in range(50)]


async def bare(server: LoopbackOpenAIServer) -> tuple[list[float], list[float]]:
    client = openai.AsyncOpenAI(api_key="sk-bench", base_url=server.base_url, max_retries=0)
    first, total = [], []
    try:
        for _ in range(RUNS):
            started = time.perf_counter()
            stream = await client.chat.completions.create(
                model="gpt-test",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
            seen_first = False
            async for chunk in stream:
                if not seen_first and chunk.choices and chunk.choices[0].delta.content:
                    first.append(time.perf_counter() - started)
                    seen_first = True
            total.append(time.perf_counter() - started)
    finally:
        await client.close()
    return first, total


async def adapted(server: LoopbackOpenAIServer) -> tuple[list[float], list[float]]:
    client = OpenAIChatClient(api_key="sk-bench", model="gpt-test", base_url=server.base_url)
    first, total = [], []
    messages = [ChatMessage.of_text(Role.USER, "hi")]
    try:
        for _ in range(RUNS):
            started = time.perf_counter()
            seen_first = False
            async for update in client.get_streaming_response(messages, ChatOptions()):
                if not seen_first and update.text_delta:
                    first.append(time.perf_counter() - started)
                    seen_first = True
            total.append(time.perf_counter() - started)
    finally:
        await client.aclose()
    return first, total


def measure() -> dict[str, float]:
    with LoopbackOpenAIServer() as server:
        for _ in range(4 * RUNS):
            server.enqueue(TextReply(text="".join(CHUNKS), chunks=CHUNKS, usage=(5, 50)))
        results: dict[str, float] = {}
        for round_ in range(2):  # alternate so neither side always runs on a warmer machine
            for name, run in (
                (("sdk", bare), ("adapter", adapted)) if round_ == 0 else (("adapter", adapted), ("sdk", bare))
            ):
                first, total = asyncio.run(run(server))
                results[f"{name} ttft"] = results.get(f"{name} ttft", 0) + statistics.median(first) / 2
                results[f"{name} total"] = results.get(f"{name} total", 0) + statistics.median(total) / 2
    return results


def report(figures: dict[str, float]) -> str:
    def line(label: str, key: str) -> str:
        sdk, adapter = figures[f"sdk {key}"], figures[f"adapter {key}"]
        return f"{label}: sdk {sdk * 1000:.2f} ms, adapter {adapter * 1000:.2f} ms (ratio {adapter / sdk:.2f})"

    return "\n".join(
        [
            f"adapter latency on a loopback OpenAI server (median of {RUNS} streamed calls, 50 deltas each)",
            line("time to first token", "ttft"),
            line("total", "total"),
        ]
    )


@pytest.mark.bench
def test_adapter_latency_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    assert all(value > 0 for value in figures.values())


if __name__ == "__main__":
    print(report(measure()))
