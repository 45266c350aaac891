"""Benchmarks of the stdio server runner: event throughput, per-turn overhead and memory over many turns.

Run with ``pytest -m bench tests/bench/bench_stdio_server.py -s`` or ``python -m tests.bench.bench_stdio_server``.
Goals (printed, not asserted): at least 50,000 events/s streaming one turn; under 2 ms of median per-turn overhead;
under 10 % RSS growth between turn 100 and turn 10,000.
"""

from __future__ import annotations

import asyncio
import gc
import io
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.stdio_runner import AgentServerRunner
from ironhive.adapters.server.turns import ProcessMessage
from ironhive.adapters.system import SystemClock
from ironhive.domain.agent_loop import AgentLoop
from ironhive.protocol.models import ServerEvent, TextDeltaEvent, UserMessageRequest
from ironhive.server import agent_processor

REQUEST = b'{"type":"user_message","content":"go"}\n'
TURN_END = b'{"type":"turn_end"'


def rss_kib() -> int:
    """Resident memory of this process in KiB (Linux ``/proc/self/status``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def streaming_processor(deltas: int) -> ProcessMessage:
    """The ``run --server`` processor over an AgentLoop whose scripted model streams ``deltas`` pieces."""
    client = ScriptedChatClient([ScriptStep(deltas=("tok ",) * deltas)])
    return agent_processor(AgentLoop(client, clock=SystemClock()))


def agent_noop_processor() -> ProcessMessage:
    """The ``run --server`` processor over an AgentLoop whose scripted model answers one word per turn."""
    return agent_processor(
        AgentLoop(ScriptedChatClient([ScriptStep(text="ok")], repeat_last=True), clock=SystemClock())
    )


async def _nothing(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
    """A processor that does nothing: the runner closes the turn with a bare ``turn_end``."""
    return
    yield TextDeltaEvent(content="")  # pragma: no cover - makes this an async generator


# --- throughput -----------------------------------------------------------------------------------------------------


@dataclass
class Throughput:
    events: int
    seconds: float
    cpu_seconds: float
    text_deltas: int
    turn_ends: int

    @property
    def per_second(self) -> float:
        return self.events / self.seconds

    @property
    def per_cpu_second(self) -> float:
        """Events per second of this process's CPU time (less sensitive to a busy machine than the wall clock)."""
        return self.events / self.cpu_seconds


def _count(data: bytes) -> tuple[int, int]:
    lines = data.splitlines()
    return sum(line.startswith(b'{"type":"text_delta"') for line in lines), sum(
        line.startswith(TURN_END) for line in lines
    )


def stream_to_file(deltas: int) -> Throughput:
    """One turn streaming ``deltas`` text deltas through the runner into a real file."""
    with tempfile.TemporaryFile() as out:
        runner = AgentServerRunner(streaming_processor(deltas), stdin=io.BytesIO(REQUEST), stdout=out)
        started, cpu = time.perf_counter(), time.process_time()
        asyncio.run(runner.run())
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        out.seek(0)
        text_deltas, turn_ends = _count(out.read())
    return Throughput(text_deltas + turn_ends, seconds, cpu_seconds, text_deltas, turn_ends)


_COUNTER = (
    "import sys; data = sys.stdin.buffer.read(); "
    'print(data.count(b\'{"type":"text_delta"\'), data.count(b\'{"type":"turn_end"\'))'
)


def stream_to_pipe(deltas: int) -> Throughput:
    """The same turn written into a real pipe read by another process (as a client would read it)."""
    with subprocess.Popen([sys.executable, "-c", _COUNTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as reader:
        out = cast(BinaryIO, reader.stdin)
        runner = AgentServerRunner(streaming_processor(deltas), stdin=io.BytesIO(REQUEST), stdout=out)
        started, cpu = time.perf_counter(), time.process_time()
        asyncio.run(runner.run())
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        counts, _ = reader.communicate(timeout=60)
    text_deltas, turn_ends = (int(number) for number in counts.split())
    return Throughput(text_deltas + turn_ends, seconds, cpu_seconds, text_deltas, turn_ends)


# --- lockstep turns over real pipes ---------------------------------------------------------------------------------


@dataclass
class Lockstep:
    latencies: list[float] = field(default_factory=list)
    rss: dict[int, int] = field(default_factory=dict)
    turn_ends: int = 0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies) * 1000

    @property
    def p95_ms(self) -> float:
        return statistics.quantiles(self.latencies, n=20)[-1] * 1000


def lockstep(process: ProcessMessage, turns: int, *, rss_at: tuple[int, ...] = (), bridge: bool = True) -> Lockstep:
    """A client thread sends one message, waits for its ``turn_end``, then sends the next, over real pipes.

    The latency of a turn is the time from writing the request to reading its ``turn_end``.
    """
    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    result = Lockstep()

    def client() -> None:
        with os.fdopen(to_server_w, "wb", buffering=0) as requests, os.fdopen(to_client_r, "rb") as events:
            for turn in range(1, turns + 1):
                sent = time.perf_counter()
                requests.write(REQUEST)
                while not (line := events.readline()).startswith(TURN_END):
                    if not line:
                        return
                result.latencies.append(time.perf_counter() - sent)
                result.turn_ends += 1
                if turn in rss_at:
                    gc.collect()
                    result.rss[turn] = rss_kib()
            requests.close()  # end of input: the runner returns
            events.read()

    thread = threading.Thread(target=client, name="bench-client")
    with os.fdopen(to_server_r, "rb") as stdin, os.fdopen(to_client_w, "wb") as stdout:
        runner = _runner(process, stdin, stdout, bridge)
        thread.start()
        asyncio.run(runner.run())
    thread.join()
    return result


def _runner(process: ProcessMessage, stdin: BinaryIO, stdout: BinaryIO, bridge: bool) -> AgentServerRunner:
    return AgentServerRunner(process, hitl_bridge=HitlBridge() if bridge else None, stdin=stdin, stdout=stdout)


# --- report ---------------------------------------------------------------------------------------------------------


@dataclass
class Figures:
    to_file: Throughput
    to_pipe: Throughput
    noop: Lockstep
    agent: Lockstep
    memory: Lockstep


def best_of(runs: int, stream: Callable[[int], Throughput], deltas: int) -> Throughput:
    """The fastest of ``runs`` runs (the machine may be busy with other work; the best run shows the code's cost)."""
    return max((stream(deltas) for _ in range(runs)), key=lambda throughput: throughput.per_second)


def measure(deltas: int = 100_000, turns: int = 2000, memory_turns: int = 10_000, runs: int = 3) -> Figures:
    return Figures(
        to_file=best_of(runs, stream_to_file, deltas),
        to_pipe=best_of(runs, stream_to_pipe, deltas),
        noop=lockstep(_nothing, turns),
        agent=lockstep(agent_noop_processor(), turns),
        memory=lockstep(_nothing, memory_turns, rss_at=(100, memory_turns)),
    )


def _rate(throughput: Throughput) -> str:
    return f"{throughput.per_second:10,.0f} events/s ({throughput.per_cpu_second:,.0f} per CPU second)"


def report(figures: Figures, memory_turns: int = 10_000) -> str:
    early, late = figures.memory.rss[100], figures.memory.rss[memory_turns]
    growth = (late - early) / early * 100
    rows: list[tuple[str, Callable[[], str]]] = [
        ("stream to a file", lambda: _rate(figures.to_file) + "  (goal >= 50,000)"),
        ("stream to a pipe", lambda: _rate(figures.to_pipe)),
        (
            "no-op turn (runner only)",
            lambda: f"median {figures.noop.median_ms:6.3f} ms, p95 {figures.noop.p95_ms:6.3f} ms  (goal < 2 ms)",
        ),
        (
            "one-word turn (agent loop)",
            lambda: f"median {figures.agent.median_ms:6.3f} ms, p95 {figures.agent.p95_ms:6.3f} ms",
        ),
        (
            f"RSS turn 100 -> {memory_turns:,}",
            lambda: f"{early / 1024:.1f} MiB -> {late / 1024:.1f} MiB ({growth:+.1f} %, goal < 10 %)",
        ),
    ]
    return "\n".join(["stdio server runner"] + [f"  {name:<28} {value()}" for name, value in rows])


@pytest.mark.bench
def test_stdio_server_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    for throughput in (figures.to_file, figures.to_pipe):
        assert (throughput.text_deltas, throughput.turn_ends) == (100_000, 1)
    assert figures.noop.turn_ends == figures.agent.turn_ends == 2000
    assert figures.memory.turn_ends == 10_000 and set(figures.memory.rss) == {100, 10_000}


if __name__ == "__main__":
    print(report(measure()))
