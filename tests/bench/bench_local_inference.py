"""Benchmark: streaming tokens/s of LlamaCppChatClient against raw llama-cpp-python on the same model and settings.

Run with ``pytest tests/bench/bench_local_inference.py -m bench -s`` or ``python tests/bench/bench_local_inference.py``.
Both sides load their own ``Llama`` with identical parameters (raw takes every one the client's worker used), stream the
same prompt greedily and count tokens the same way: one streamed chunk with text is one token (llama-cpp-python streams
one chunk per token, and the client turns each chunk into one text delta). Runs alternate between the two sides, who
goes first swapping every round, so machine noise hits both alike; the first run of each side is a warm-up (model load,
prompt evaluation), not counted.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

import pytest

from ironhive.adapters.llamacpp.mapping import to_llama_messages
from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.ports.chat import ChatMessage, ChatOptions, Role

PROMPT = (ChatMessage.of_text(Role.USER, "Write a short story about a robot who learns to paint."),)
MAX_TOKENS = 128
N_CTX = 2048
# llama-cpp-python's own default (half the CPUs): it leaves a core for the event loop and for the rest of the machine.
N_THREADS = max(1, (os.cpu_count() or 2) // 2)
REPETITIONS = 7
GOAL = 0.95


@dataclass(frozen=True, slots=True)
class Run:
    """One streamed generation: tokens seen and seconds from the call to the end of the stream."""

    tokens: int
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        """Throughput of this run."""
        return self.tokens / self.seconds


@dataclass(frozen=True, slots=True)
class Report:
    """Median throughput of both sides over the counted runs."""

    client_runs: list[Run]
    raw_runs: list[Run]

    @property
    def client_tps(self) -> float:
        """Median tokens/s of LlamaCppChatClient."""
        return statistics.median(run.tokens_per_second for run in self.client_runs)

    @property
    def raw_tps(self) -> float:
        """Median tokens/s of raw llama-cpp-python."""
        return statistics.median(run.tokens_per_second for run in self.raw_runs)

    def render(self) -> str:
        """The figures as printed."""
        ratio = self.client_tps / self.raw_tps
        return "\n".join(
            (
                f"local inference, {bundled_model_path().name}, n_ctx={N_CTX}, n_threads={N_THREADS}, "
                f"temperature=0, max_tokens={MAX_TOKENS}, median of {len(self.client_runs)} runs",
                f"  raw llama-cpp-python : {self.raw_tps:7.1f} tokens/s "
                f"(tokens per run: {[run.tokens for run in self.raw_runs]})",
                f"  LlamaCppChatClient   : {self.client_tps:7.1f} tokens/s "
                f"(tokens per run: {[run.tokens for run in self.client_runs]})",
                f"  ratio client/raw     : {ratio:7.3f} (goal >= {GOAL})",
            )
        )


async def _client_run(client: Any) -> Run:
    started = time.perf_counter()
    tokens = 0
    async for update in client.get_streaming_response(
        PROMPT, ChatOptions(temperature=0.0, max_output_tokens=MAX_TOKENS)
    ):
        tokens += bool(update.text_delta)
    return Run(tokens=tokens, seconds=time.perf_counter() - started)


def _raw_run(llama: Any) -> Run:
    started = time.perf_counter()
    tokens = 0
    for chunk in llama.create_chat_completion(
        to_llama_messages(PROMPT), temperature=0.0, max_tokens=MAX_TOKENS, stream=True
    ):
        tokens += bool(chunk["choices"][0]["delta"].get("content"))
    return Run(tokens=tokens, seconds=time.perf_counter() - started)


async def measure(repetitions: int = REPETITIONS) -> Report:
    """Run both sides ``repetitions`` times (after one warm-up each), alternating, and collect the runs."""
    import llama_cpp

    from ironhive.adapters.llamacpp.client import LlamaCppChatClient
    from ironhive.adapters.llamacpp.worker import load_model

    path = bundled_model_path()
    client = LlamaCppChatClient(model_path=path, n_ctx=N_CTX, n_threads=N_THREADS)
    raw: Any = None
    try:
        await _client_run(client)
        # Raw gets every setting the client's worker loaded with (prompt threads, attention kernel, batch).
        parameters = client.load_parameters or {}
        keys = ("n_threads", "n_threads_batch", "n_batch", "n_ubatch", "flash_attn")
        same = {key: parameters[key] for key in keys if parameters.get(key) is not None}
        kwargs = {"model_path": str(path), "n_ctx": client.context_size, "n_threads": N_THREADS, **same}
        raw = load_model(llama_cpp, {**kwargs, "verbose": False}, use_extra_bufts=bool(parameters["use_extra_bufts"]))
        _raw_run(raw)
        client_runs: list[Run] = []
        raw_runs: list[Run] = []
        for repetition in range(repetitions):
            # Swapping who goes first each round keeps slow drifts of the machine's load from favouring one side.
            if repetition % 2:
                raw_runs.append(_raw_run(raw))
                client_runs.append(await _client_run(client))
            else:
                client_runs.append(await _client_run(client))
                raw_runs.append(_raw_run(raw))
        return Report(client_runs=client_runs, raw_runs=raw_runs)
    finally:
        if raw is not None:
            raw.close()
        client.close()


@pytest.mark.bench
@pytest.mark.local_model
async def test_local_inference_throughput(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")

    report = await measure()

    with capsys.disabled():
        print("\n" + report.render())
    assert all(run.tokens > 0 for run in report.client_runs + report.raw_runs)


if __name__ == "__main__":
    print(asyncio.run(measure()).render())
