"""Benchmarks of the keyless local model: first and second ``ironhive -p "Say hello" -o json``, and prefill speed.

Run with ``pytest tests/bench/bench_local_keyless.py -m bench -s``. The CLI runs use a fresh ``HOME`` (so the first
run finds no prefix cache) and read the prompt tokens each run evaluated from the client's ``IRONHIVE_LOG_LEVEL=info``
line. Prefill compares LlamaCppChatClient (prefix cache and memory reuse defeated by a fresh prompt each time) with
raw llama-cpp-python evaluating as many tokens, loaded with the same threads and batch the client's worker used.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import clean_environment, ironhive_executable

PROMPT_LINE = re.compile(r"local prompt: (\d+) tokens, (\d+) evaluated")
PREFILL_REPETITIONS = 5
SECOND_RUN_GOAL_SECONDS = 1.5


@dataclass(frozen=True, slots=True)
class CliRun:
    """One keyless one-shot: wall seconds, prompt tokens, the prompt tokens it evaluated and the answer's tokens."""

    seconds: float
    prompt_tokens: int
    evaluated_tokens: int
    output_tokens: int


def keyless_run(home: Path) -> CliRun:
    """Run ``ironhive -p "Say hello" -o json`` with no key and ``home`` as ``HOME``."""
    work = home / "work"
    work.mkdir(exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run(
        [ironhive_executable(), "-p", "Say hello", "-o", "json"],
        cwd=work,
        env=clean_environment(home, {"IRONHIVE_LOG_LEVEL": "info"}),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    seconds = time.perf_counter() - started
    found = PROMPT_LINE.search(done.stderr)
    assert found is not None, done.stderr
    output_tokens = int(json.loads(done.stdout)["usage"]["outputTokens"])
    return CliRun(
        seconds=seconds, prompt_tokens=int(found[1]), evaluated_tokens=int(found[2]), output_tokens=output_tokens
    )


async def prefill_rates() -> tuple[float, float, dict[str, object]]:
    """Median prefill tokens/s of the client and of raw llama-cpp-python, and the client's load parameters."""
    from llama_cpp import Llama

    from ironhive.adapters.llamacpp.client import LlamaCppChatClient
    from ironhive.adapters.llamacpp.model_files import bundled_model_path
    from ironhive.ports.chat import ChatMessage, ChatOptions, Role

    text = " ".join(f"Item {n}: the quick brown fox jumps over the lazy dog." for n in range(60))
    client = LlamaCppChatClient(n_ctx=2048, prefix_cache_max_bytes=0)
    client_rates: list[float] = []
    evaluated: list[int] = []
    try:
        for repetition in range(PREFILL_REPETITIONS + 1):
            # A different first word each time: nothing of the previous prompt can be reused.
            message = ChatMessage.of_text(Role.USER, f"{repetition}{repetition} {text}")
            await client.get_response((message,), ChatOptions(temperature=0.0, max_output_tokens=1))
            stats = client.last_run
            assert stats is not None and stats.evaluated_tokens > 500
            if repetition:  # the first is a warm-up
                client_rates.append(stats.evaluated_tokens / stats.prefill_seconds)
                evaluated.append(stats.evaluated_tokens)
        parameters = client.load_parameters or {}
    finally:
        client.close()
    raw = Llama(
        model_path=str(bundled_model_path()),
        n_ctx=2048,
        n_threads=int(str(parameters.get("n_threads") or 1)),
        n_threads_batch=int(str(parameters.get("n_threads_batch") or 2)),
        n_batch=int(str(parameters.get("n_batch") or 512)),
        verbose=False,
    )
    raw_rates: list[float] = []
    try:
        tokens = raw.tokenize(text.encode())
        count = statistics.median(evaluated)
        for repetition in range(PREFILL_REPETITIONS + 1):
            raw.reset()
            prompt = [raw.token_bos(), *raw.tokenize(f"{repetition}{repetition}".encode(), add_bos=False), *tokens]
            prompt = prompt[: int(count)]
            started = time.perf_counter()
            raw.eval(prompt)
            if repetition:
                raw_rates.append(len(prompt) / (time.perf_counter() - started))
    finally:
        raw.close()
    return statistics.median(client_rates), statistics.median(raw_rates), parameters


@pytest.mark.bench
@pytest.mark.local_model
async def test_keyless_first_and_second_run_and_prefill(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")
    with tempfile.TemporaryDirectory() as folder:
        first = keyless_run(Path(folder))
        second = keyless_run(Path(folder))
    client_rate, raw_rate, parameters = await prefill_rates()

    with capsys.disabled():
        print(
            "\n".join(
                (
                    "",
                    'keyless `ironhive -p "Say hello" -o json` (fresh HOME, bundled model)',
                    f"  first run : {first.seconds:6.2f} s, {first.evaluated_tokens} of {first.prompt_tokens} "
                    f"prompt tokens evaluated, {first.output_tokens} answer tokens",
                    f"  second run: {second.seconds:6.2f} s, {second.evaluated_tokens} of {second.prompt_tokens} "
                    f"prompt tokens evaluated, {second.output_tokens} answer tokens "
                    f"(goal <= {SECOND_RUN_GOAL_SECONDS} s and <= 0.25x the first)",
                    f"  ratio second/first: {second.seconds / first.seconds:5.2f}",
                    f"prefill, median of {PREFILL_REPETITIONS} (threads {parameters.get('n_threads')}, "
                    f"batch threads {parameters.get('n_threads_batch')}, n_batch {parameters.get('n_batch')}, "
                    f"extra buffer types {parameters.get('use_extra_bufts')})",
                    f"  raw llama-cpp-python : {raw_rate:8.1f} tokens/s",
                    f"  LlamaCppChatClient   : {client_rate:8.1f} tokens/s",
                    f"  ratio client/raw     : {client_rate / raw_rate:8.3f} (goal >= 0.95)",
                )
            )
        )
    assert second.evaluated_tokens < first.evaluated_tokens


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-m", "bench", "-s"]))
