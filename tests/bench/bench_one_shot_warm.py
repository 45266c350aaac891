"""Warm-path benchmark: median wall time of ``ironhive -p hi -o json`` cold (no warm process) and warm (forked from it).

Both against the same zero-latency loopback OpenAI model, from one run; figures only, no timed assertion.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.cli import clean_environment, ironhive_executable
from tests.support.openai_server import LoopbackOpenAIServer

RUNS = int(os.environ.get("IRONHIVE_BENCH_RUNS", "9"))


def _environment(home: Path, runtime: Path, server: LoopbackOpenAIServer, daemon: str) -> dict[str, str]:
    extra = {
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_MODEL": "gpt-test",
        "OPENAI_ENDPOINT": server.base_url,
        "XDG_RUNTIME_DIR": str(runtime),
        "IRONHIVE_DAEMON": daemon,
    }
    environment = clean_environment(home, extra)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # measured as a user's install runs: with bytecode caches
    return environment


def _one(server: LoopbackOpenAIServer, environment: dict[str, str], cwd: Path, *args: str) -> float:
    server.enqueue_text("hello")
    started = time.perf_counter()
    completed = subprocess.run(
        [ironhive_executable(), *(args or ("-p", "hi", "-o", "json"))],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    assert completed.returncode == 0, completed.stderr
    return elapsed


def _served(environment: dict[str, str], cwd: Path) -> int | None:
    completed = subprocess.run(
        [ironhive_executable(), "daemon", "status"], env=environment, cwd=cwd, capture_output=True, text=True
    )
    found = re.search(r"(\d+) runs served", completed.stdout)
    return int(found[1]) if completed.returncode == 0 and found else None


def measure() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as temporary, LoopbackOpenAIServer() as server:
        home = Path(temporary) / "home"
        runtime = Path(temporary) / "run"
        home.mkdir()
        runtime.mkdir(mode=0o700)
        cold_env = _environment(home, runtime, server, "0")
        warm_env = _environment(home, runtime, server, "1")
        _one(server, cold_env, home)  # bytecode and disk caches
        cold = [_one(server, cold_env, home) for _ in range(RUNS)]
        _one(server, warm_env, home)  # starts the warm process
        deadline = time.monotonic() + 120
        while _served(warm_env, home) is None:
            assert time.monotonic() < deadline, "the warm process did not start"
            time.sleep(0.2)
        _one(server, warm_env, home)
        before = _served(warm_env, home)
        try:
            warm = [_one(server, warm_env, home) for _ in range(RUNS)]
            after = _served(warm_env, home)
        finally:
            subprocess.run([ironhive_executable(), "daemon", "stop"], env=warm_env, cwd=home, capture_output=True)
        assert before is not None and after == before + RUNS, "a warm run went direct"
    return {"cold": statistics.median(cold), "warm": statistics.median(warm)}


def report(figures: dict[str, float]) -> str:
    cold, warm = figures["cold"], figures["warm"]
    return "\n".join(
        [
            f"ironhive -p hi -o json against a loopback model (median of {RUNS} runs)",
            f"cold (no warm process)   {cold * 1000:7.1f} ms",
            f"warm (forked per run)    {warm * 1000:7.1f} ms",
            f"warm / cold              {warm / cold:7.2f}  ({cold / warm:.1f}x faster)",
        ]
    )


@pytest.mark.bench
def test_one_shot_cold_and_warm_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    assert all(seconds > 0 for seconds in figures.values())


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    print(report(measure()))
