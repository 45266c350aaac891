"""Start-up benchmark: median wall time of ``ironhive --version`` / ``--help`` against a bare ``python -c pass``."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUNS = 15
# Measured as a user's install runs: with bytecode caches (a machine may set PYTHONDONTWRITEBYTECODE).
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def ironhive_command() -> list[str]:
    script = Path(sys.executable).with_name("ironhive")
    return [str(script)] if script.exists() else [shutil.which("ironhive") or "ironhive"]


def median_seconds(command: list[str], runs: int = RUNS) -> float:
    subprocess.run(command, capture_output=True, check=True, env=ENV)  # warm the caches, write bytecode
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=ENV)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def measure() -> dict[str, float]:
    bare = median_seconds([sys.executable, "-c", "pass"])
    version = median_seconds([*ironhive_command(), "--version"])
    help_ = median_seconds([*ironhive_command(), "--help"])
    return {"python -c pass": bare, "ironhive --version": version, "ironhive --help": help_}


def report(figures: dict[str, float]) -> str:
    bare = figures["python -c pass"]
    lines = [
        f"{name:<20} median {seconds * 1000:7.1f} ms  ({seconds / bare:4.2f}x bare)"
        for name, seconds in figures.items()
    ]
    return "\n".join([f"start-up (median of {RUNS} runs)", *lines])


@pytest.mark.bench
def test_startup_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    assert all(seconds > 0 for seconds in figures.values())


if __name__ == "__main__":
    print(report(measure()))
