"""Benchmarks of the keyless local model: first and second ``ironhive -p "Say hello" -o json``, and prefill speed.

Run with ``pytest tests/bench/bench_local_keyless.py -m bench -s``. The CLI runs use a fresh ``HOME`` (so the first
run finds no prefix cache) and read the prompt tokens each run evaluated from the client's ``IRONHIVE_LOG_LEVEL=info``
line. They are measured twice: as users run them (the warm process and the resident local worker on, in a private
runtime folder of their own) and direct (``IRONHIVE_DAEMON=0``: a child worker that restores the prompt from the
on-disk prefix cache). Besides wall time each run reports CPU seconds: its own process tree's, and those the warm
process and the resident worker spent meanwhile (on a busy machine wall time says little). Prefill compares
LlamaCppChatClient (prefix cache and memory reuse defeated by a fresh prompt each time) with raw llama-cpp-python
evaluating as many tokens, loaded with the same threads and batch the client's worker used.
"""

from __future__ import annotations

import json
import os
import re
import resource
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
    """One keyless one-shot: wall seconds, CPU seconds (its process tree; the warm process and resident worker),
    prompt tokens, the prompt tokens it evaluated and the answer's tokens."""

    seconds: float
    own_cpu: float
    resident_cpu: float
    prompt_tokens: int
    evaluated_tokens: int
    output_tokens: int

    def line(self, name: str) -> str:
        return (
            f"  {name}: {self.seconds:6.2f} s wall, CPU {self.own_cpu:5.2f} s run + {self.resident_cpu:5.2f} s "
            f"warm/resident, {self.evaluated_tokens} of {self.prompt_tokens} prompt tokens evaluated, "
            f"{self.output_tokens} answer tokens"
        )


def _resident_cpu(runtime: Path) -> float:
    """CPU seconds of the processes serving from ``runtime`` (warm process and its reaped children, residents)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    marker = str(runtime).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / ticks  # utime, stime, cutime, cstime
    return total


def keyless_run(home: Path, runtime: Path, *, warm: bool) -> CliRun:
    """Run ``ironhive -p "Say hello" -o json`` with no key, ``home`` as ``HOME`` and ``runtime`` as the runtime
    folder; ``warm``: the warm process and the resident worker may serve it."""
    work = home / "work"
    work.mkdir(exist_ok=True)
    extra = {"IRONHIVE_LOG_LEVEL": "info", "IRONHIVE_DAEMON": "1" if warm else "0", "XDG_RUNTIME_DIR": str(runtime)}
    before, resident_before = resource.getrusage(resource.RUSAGE_CHILDREN), _resident_cpu(runtime)
    started = time.perf_counter()
    done = subprocess.run(
        [ironhive_executable(), "-p", "Say hello", "-o", "json"],
        cwd=work,
        env=clean_environment(home, extra),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    seconds = time.perf_counter() - started
    after, resident_after = resource.getrusage(resource.RUSAGE_CHILDREN), _resident_cpu(runtime)
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = PROMPT_LINE.search(done.stderr)
    assert found is not None, done.stderr
    output_tokens = int(json.loads(done.stdout)["usage"]["outputTokens"])
    return CliRun(
        seconds=seconds,
        own_cpu=own,
        resident_cpu=max(0.0, resident_after - resident_before),
        prompt_tokens=int(found[1]),
        evaluated_tokens=int(found[2]),
        output_tokens=output_tokens,
    )


def keyless_runs(*, warm: bool) -> tuple[CliRun, CliRun]:
    """The first and second run in a fresh ``HOME`` (and runtime folder, ended afterwards)."""
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory(prefix="ihb") as runtime:
        home = Path(folder)
        try:
            return keyless_run(home, Path(runtime), warm=warm), keyless_run(home, Path(runtime), warm=warm)
        finally:
            subprocess.run(
                [ironhive_executable(), "daemon", "stop"],
                env=clean_environment(home, {"XDG_RUNTIME_DIR": runtime}),
                capture_output=True,
                timeout=60,
                check=False,
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
def test_keyless_first_and_second_run(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")
    first, second = keyless_runs(warm=True)
    direct_first, direct_second = keyless_runs(warm=False)

    with capsys.disabled():
        print(
            "\n".join(
                (
                    "",
                    'keyless `ironhive -p "Say hello" -o json` (fresh HOME, bundled model), as users run it '
                    "(warm process and resident worker)",
                    first.line("first run "),
                    second.line("second run"),
                    f"  ratio second/first: {second.seconds / first.seconds:5.2f} wall, "
                    f"{(second.own_cpu + second.resident_cpu) / (first.own_cpu + first.resident_cpu):5.2f} CPU "
                    f"(goal <= {SECOND_RUN_GOAL_SECONDS} s and <= 0.25x the first)",
                    "direct (IRONHIVE_DAEMON=0: a child worker, the prompt restored from the on-disk prefix cache)",
                    direct_first.line("first run "),
                    direct_second.line("second run"),
                    f"  ratio second/first: {direct_second.seconds / direct_first.seconds:5.2f} wall, "
                    f"{direct_second.own_cpu / direct_first.own_cpu:5.2f} CPU",
                )
            )
        )
    assert second.evaluated_tokens < first.evaluated_tokens
    assert direct_second.evaluated_tokens < direct_first.evaluated_tokens


@pytest.mark.bench
@pytest.mark.local_model
async def test_prefill_rate_against_raw_llama_cpp(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")
    client_rate, raw_rate, parameters = await prefill_rates()

    with capsys.disabled():
        print(
            "\n".join(
                (
                    "",
                    f"prefill, median of {PREFILL_REPETITIONS} (threads {parameters.get('n_threads')}, "
                    f"batch threads {parameters.get('n_threads_batch')}, n_batch {parameters.get('n_batch')}, "
                    f"extra buffer types {parameters.get('use_extra_bufts')})",
                    f"  raw llama-cpp-python : {raw_rate:8.1f} tokens/s",
                    f"  LlamaCppChatClient   : {client_rate:8.1f} tokens/s",
                    f"  ratio client/raw     : {client_rate / raw_rate:8.3f} (goal >= 0.95)",
                )
            )
        )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-m", "bench", "-s"]))
