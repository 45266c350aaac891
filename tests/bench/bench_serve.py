"""Benchmarks of ``ironhive serve``: turns per second embedded and on Redis with 1 and 2 workers, and the API's latency.

Run with ``pytest -m bench tests/bench/bench_serve.py -s`` or ``python -m tests.bench.bench_serve`` (needs
``redis-server``). Every turn goes to a loopback OpenAI-compatible model (``--provider openai``) that answers after a
fixed 200 ms, so a turn is latency-bound: a worker running ``--concurrency`` turns at once can do at most
``concurrency / 0.2 s`` turns per second, and twice that with two workers. The offered load is ``SESSIONS`` sessions,
each sending its next message as soon as the previous turn ends (a session's turns run one at a time), three times as
many as the turns two workers run at once, so a turn always waits for a worker and the workers are the bottleneck.
Goals (printed, not asserted): 2 workers / 1 worker >= 1.8; the API's added latency over ``run --server`` is small
next to the model's 200 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from tests.support.cli import clean_environment, ironhive_executable
from tests.support.components import REDIS
from tests.support.redis_server import redis_server
from tests.support.serve_process import ServeProcess
from tests.support.server_process import ServerProcess, openai_environment

LATENCY = 0.2
"""Seconds the loopback model takes to answer each request."""
CONCURRENCY = 4
"""Turns one worker (and the embedded server, ``server.maxConcurrentTurns``) runs at once. Four latency-bound turns
cost a worker about 20 turns/s; two workers at 40 turns/s keep the whole chain (client, front, Redis, workers, model)
well under the two cores, so the figure measures how turns spread over workers, not a CPU limit."""
SESSIONS = 3 * 2 * CONCURRENCY
"""Concurrent sessions: three times what two workers run at once, so every worker slot always has a turn waiting."""
WARM_UP = 4.0
"""Seconds of load before counting (agents opened, connections made, queues filled)."""
WINDOW = 10.0
"""Seconds over which turns are counted."""
SEQUENTIAL_TURNS = 50
"""Turns one after another for the latency comparison (plus one unmeasured first turn on each surface)."""
TURN_TIMEOUT = 30.0
"""Seconds a session waits for its turn's ``turn_end`` before the run counts as failed (a hang is reported, not
waited out)."""
TOKEN = "bench-serve-token"
ROUNDS = 2
"""Rounds of (1 worker, 2 workers) on Redis; the best round of each gives the scaling ratio."""
ONE_WORKER, TWO_WORKERS = "redis, 1 worker", "redis, 2 workers"
STARTED = re.compile(r"Worker \S+ taking turns")

_MODEL = """
import sys
from tests.support.openai_server import LoopbackOpenAIServer
with LoopbackOpenAIServer(latency=float(sys.argv[1])) as server:
    for _ in range(int(sys.argv[2])):
        server.enqueue_text("ok", usage=(12, 1))
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far (Linux ``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def loopback_model(replies: int) -> Iterator[str]:
    """The loopback OpenAI server answering ``replies`` times after ``LATENCY``, in its own process (its CPU is not
    this process's, which drives the load); yields its base URL."""
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", _MODEL, str(LATENCY), str(replies)]
    with subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stdin is not None
        try:
            url = process.stdout.readline().strip()
            if not url.startswith("http://127.0.0.1:"):
                raise RuntimeError(f"the loopback model did not start: {url!r}")
            yield url
        finally:
            process.stdin.close()
            process.wait(timeout=30)


@contextmanager
def worker(redis_url: str, cwd: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``ironhive worker --redis URL --concurrency CONCURRENCY --provider openai``, started (its start line seen)."""
    command = [ironhive_executable(), "worker", "--redis", redis_url, "--concurrency", str(CONCURRENCY)]
    process = subprocess.Popen(
        [*command, "--provider", "openai"], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if STARTED.search(line):
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not started.wait(0.1):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ironhive worker did not start: {''.join(lines)}")
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == 0 and "Traceback" not in "".join(lines), "".join(lines)


# --- throughput -----------------------------------------------------------------------------------------------------


@dataclass
class Load:
    """What the sessions saw: when each turn ended, and the turns that did not end well."""

    ends: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def _turn_end(events: aiohttp.ClientResponse) -> list[str]:
    """Read the session's events up to the next ``turn_end``; returns the messages of its ``error`` events."""
    errors: list[str] = []
    while line := await events.content.readline():
        if line.startswith(b"data: "):
            event = json.loads(line[6:])
            if event["type"] == "error":
                errors.append(event["message"])
            elif event["type"] == "turn_end":  # a session's turns run one at a time, in order: this one is ours
                return errors
    return [*errors, "the event stream ended before turn_end"]


async def _session(http: aiohttp.ClientSession, base: str, stop_at: float, load: Load) -> None:
    """One session: listen to its events; send a message, wait for its ``turn_end``, again until ``stop_at``."""
    async with http.post(f"{base}/v1/sessions", json={}) as created:
        session_id = (await created.json())["id"]
    async with http.get(f"{base}/v1/sessions/{session_id}/events", timeout=aiohttp.ClientTimeout()) as events:
        assert events.status == 200, await events.text()
        turn = 0
        while time.monotonic() < stop_at:
            async with http.post(f"{base}/v1/sessions/{session_id}/messages", json={"content": f"turn {turn}"}) as sent:
                if sent.status != 202:
                    load.failures.append(f"POST message: {sent.status} {await sent.text()}")
                    return
            try:
                errors = await asyncio.wait_for(_turn_end(events), TURN_TIMEOUT)
            except TimeoutError:
                errors = [f"session {session_id}: no turn_end {TURN_TIMEOUT:.0f} s after turn {turn} was sent"]
            load.failures += errors
            if errors:
                return
            load.ends.append(time.monotonic())
            turn += 1


async def _offer_load(base: str) -> Load:
    load = Load()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    connector = aiohttp.TCPConnector(limit=0)
    stop_at = time.monotonic() + WARM_UP + WINDOW
    async with aiohttp.ClientSession(headers=headers, connector=connector) as http:
        await asyncio.gather(*(_session(http, base, stop_at, load) for _ in range(SESSIONS)))
    return load


@dataclass(frozen=True)
class Rate:
    """Turns per second over the counting window, and the CPU the server side spent per turn meanwhile."""

    name: str
    turns: int
    failures: list[str]
    cpu_ms_per_turn: float
    load_average: float
    """The machine's 1-minute load average at the window's end (other work on the cores shows here)."""

    @property
    def per_second(self) -> float:
        return self.turns / WINDOW


def measure_rate(name: str, front: ServeProcess, server_pids: list[int]) -> Rate:
    """Offer the load to ``front``; count the turns ending within the window after the warm-up."""
    started = time.monotonic()
    cpu: dict[int, float] = {}
    machine_load: list[float] = []

    def sample_cpu_at_window_edges() -> None:
        time.sleep(WARM_UP)
        cpu.update({pid: -cpu_seconds(pid) for pid in server_pids})
        time.sleep(WINDOW)
        for pid in server_pids:
            cpu[pid] += cpu_seconds(pid)
        machine_load.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample_cpu_at_window_edges)
    sampler.start()
    load = asyncio.run(_offer_load(f"http://{front.host}:{front.port}"))
    sampler.join()
    counted = [end for end in load.ends if started + WARM_UP <= end < started + WARM_UP + WINDOW]
    cpu_ms = sum(cpu.values()) * 1000 / max(1, len(counted))
    return Rate(name, len(counted), load.failures, cpu_ms, machine_load[0])


# --- latency --------------------------------------------------------------------------------------------------------


def percentile(samples: list[float], q: int) -> float:
    """The ``q``-th percentile in milliseconds (inclusive method: p99 of 50 samples lies between the two largest)."""
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1] * 1000


@dataclass(frozen=True)
class Latencies:
    """Seconds from sending each message to reading its ``turn_end``, on ``run --server`` and through ``serve``."""

    run_server: list[float]
    serve: list[float]


def interleaved_latencies(front: ServeProcess, work: Path, home: Path, env: dict[str, str]) -> Latencies:
    """``SEQUENTIAL_TURNS`` turns on ``run --server`` (a line on stdin, its ``turn_end`` on stdout) and as many through
    ``front`` (a POST, its ``turn_end`` on the session's open SSE stream), taken in turn, so a burst of other work on
    the machine falls on both alike; the first turn of each is not counted (agent opened, SDK imported)."""
    measured = Latencies([], [])
    session_id = front.new_session()
    with (
        ServerProcess("--provider", "openai", cwd=work, home=home, env=env) as server,
        front.events(session_id) as stream,
    ):
        for turn in range(SEQUENTIAL_TURNS + 1):
            sent = time.perf_counter()
            server.user_message(f"turn {turn}")
            events = server.read_turn()
            run_server = time.perf_counter() - sent
            assert not [e for e in events if e["type"] == "error"], events
            sent = time.perf_counter()
            front.send(session_id, f"turn {turn}")
            frames = stream.turn()
            serve = time.perf_counter() - sent
            assert not [f for f in frames if f.event == "error"], frames
            if turn > 0:
                measured.run_server.append(run_server)
                measured.serve.append(serve)
    return measured


# --- report ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    rates: list[Rate]
    embedded: Latencies
    on_redis: Latencies


def measure() -> Figures:
    REDIS.require()  # before minutes of the embedded part, not after
    folder = Path(tempfile.mkdtemp(prefix="ironhive-bench-serve-"))
    try:
        work, home = folder / "work", folder / "home"
        (home / ".ironhive").mkdir(parents=True)
        work.mkdir()
        (home / ".ironhive" / "config.yaml").write_text(f"server:\n  maxConcurrentTurns: {CONCURRENCY}\n")
        with loopback_model(replies=100_000) as model_url:
            extra = {**openai_environment(model_url), "IRONHIVE_SERVER_TOKEN": TOKEN}
            env = clean_environment(home, extra)
            rates: list[Rate] = []
            with ServeProcess("--provider", "openai", cwd=work, home=home, env=extra) as front:
                rates.append(measure_rate("embedded", front, [front.process.pid]))
                embedded = interleaved_latencies(front, work, home, extra)
            with ExitStack() as stack:
                redis = stack.enter_context(redis_server())
                first = stack.enter_context(worker(redis.url, work, env))
                front = stack.enter_context(
                    ServeProcess("--redis", redis.url, "--provider", "openai", cwd=work, home=home, env=extra)
                )
                pids = [front.process.pid, redis.process.pid, first.pid]
                # rounds of 1 then 2 workers: a burst of other work on the machine skews one round, not the ratio
                for _ in range(ROUNDS):
                    rates.append(measure_rate(ONE_WORKER, front, pids))
                    with worker(redis.url, work, env) as second:
                        rates.append(measure_rate(TWO_WORKERS, front, [*pids, second.pid]))
                on_redis = interleaved_latencies(front, work, home, extra)
        return Figures(rates, embedded, on_redis)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(figures: Figures) -> str:
    ceiling = CONCURRENCY / LATENCY
    lines = [
        f"ironhive serve: loopback model answering in {LATENCY * 1000:.0f} ms, {SESSIONS} sessions back to back, "
        f"{CONCURRENCY} turns at once per worker, counted over {WINDOW:.0f} s",
        f"  per-worker ceiling (model time only): {CONCURRENCY} / {LATENCY} s = {ceiling:.0f} turns/s",
    ]
    for rate in figures.rates:
        lines.append(
            f"  {rate.name:<18} {rate.per_second:7.1f} turns/s  ({rate.turns} turns, "
            f"{rate.cpu_ms_per_turn:4.1f} ms server-side CPU per turn, load average {rate.load_average:.1f}, "
            f"{len(rate.failures)} failed)"
        )
    one, two = (max(r.per_second for r in figures.rates if r.name == name) for name in (ONE_WORKER, TWO_WORKERS))
    lines.append(f"  scaling 2 workers / 1 worker (best round of each): {two / one:.2f}x  (goal >= 1.8x)")
    lines.append(
        f"latency of one turn, {SEQUENTIAL_TURNS} turns one after another on each, taken in turn "
        "(message sent -> turn_end read)"
    )
    for deployment, latencies in (("serve", figures.embedded), ("serve --redis, 1 worker", figures.on_redis)):
        rows = (("run --server (stdio)", latencies.run_server), (f"{deployment} (POST + SSE)", latencies.serve))
        for name, samples in rows:
            lines.append(f"  {name:<38} p50 {percentile(samples, 50):7.1f} ms   p99 {percentile(samples, 99):7.1f} ms")
        added = [percentile(latencies.serve, q) - percentile(latencies.run_server, q) for q in (50, 99)]
        lines.append(f"  {'  added by ' + deployment:<38} p50 {added[0]:+7.1f} ms   p99 {added[1]:+7.1f} ms")
    return "\n".join(lines)


@pytest.mark.bench
def test_serve_figures() -> None:
    figures = measure()
    print("\n" + report(figures))
    for rate in figures.rates:
        assert rate.failures == [], (rate.name, rate.failures[:5])
        assert rate.turns > 0, rate.name
    for latencies in (figures.embedded, figures.on_redis):
        assert len(latencies.run_server) == len(latencies.serve) == SEQUENTIAL_TURNS


if __name__ == "__main__":
    print(report(measure()))
