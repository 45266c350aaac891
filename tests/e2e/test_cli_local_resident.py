"""A second keyless one-shot is answered by the resident worker the first left: only the new prompt tokens are
evaluated, and ``ironhive daemon stop`` ends it. Off where the warm process is off (``IRONHIVE_DAEMON=0``)."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive

pytest.importorskip("llama_cpp")

pytestmark = pytest.mark.local_model

PROMPT_LINE = re.compile(r"local prompt: (\d+) tokens, (\d+) evaluated, (\d+) reused from memory")
RESIDENT_LINE = re.compile(r"resident worker (\d+) started early")


@pytest.fixture
def runtime() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="ihe"))  # short: socket paths must fit 107 bytes
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def one_shot(home: Path, runtime: Path, daemon: str, *flags: str) -> tuple[str, tuple[int, int, int]]:
    completed = run_ironhive(
        *flags,
        "-p",
        "Say hello",
        "-o",
        "json",
        cwd=home,
        home=home,
        env={"IRONHIVE_LOG_LEVEL": "info", "IRONHIVE_DAEMON": daemon, "XDG_RUNTIME_DIR": str(runtime)},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["content"].strip() != ""
    found = PROMPT_LINE.search(completed.stderr)
    assert found is not None, completed.stderr
    return completed.stderr, (int(found[1]), int(found[2]), int(found[3]))


def test_the_second_run_reuses_the_resident_and_daemon_stop_ends_it(tmp_path: Path, runtime: Path) -> None:
    env = {"IRONHIVE_DAEMON": "1", "XDG_RUNTIME_DIR": str(runtime)}
    try:
        first_log, first = one_shot(tmp_path, runtime, "1")
        second_log, second = one_shot(tmp_path, runtime, "1")
    finally:
        stopped = run_ironhive("daemon", "stop", cwd=tmp_path, home=tmp_path, env=env)

    resident = RESIDENT_LINE.search(first_log)
    again = RESIDENT_LINE.search(second_log)
    assert resident is not None and again is not None and resident[1] == again[1], second_log
    assert first[1] == first[0]  # a fresh home: nothing cached anywhere
    assert second[0] == first[0] and second[1] <= 1 and second[2] == second[0] - second[1]
    assert "resident local model worker" in stopped.stdout, stopped.stdout
    deadline = time.monotonic() + 20
    while list((runtime / "ironhive").glob("lm-*.sock")):
        assert time.monotonic() < deadline, "the resident did not exit"
        time.sleep(0.05)


@pytest.mark.parametrize(("daemon", "flags"), [("0", ()), ("1", ("--no-daemon",))], ids=["variable", "flag"])
def test_no_resident_where_the_warm_process_is_off(
    tmp_path: Path, runtime: Path, daemon: str, flags: tuple[str, ...]
) -> None:
    log, _ = one_shot(tmp_path, runtime, daemon, *flags)

    assert RESIDENT_LINE.search(log) is None and "worker" in log
    assert not (runtime / "ironhive").exists()
