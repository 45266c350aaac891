"""The bundled local model answers ``ironhive -p "Say hello"`` with no API key and no network."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive

pytest.importorskip("llama_cpp")

pytestmark = pytest.mark.local_model


def test_say_hello_on_the_bundled_model(tmp_path: Path) -> None:
    completed = run_ironhive("-p", "Say hello", cwd=tmp_path, home=tmp_path, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() != ""


def test_local_model_jsonl_stream(tmp_path: Path) -> None:
    completed = run_ironhive(
        "-p", "Say hello", "--provider", "local", "-o", "jsonl", cwd=tmp_path, home=tmp_path, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    assert lines[0]["type"] == "start" and lines[-1]["type"] == "done"
    assert "".join(line["content"] for line in lines if line["type"] == "text").strip() != ""
    assert completed.stderr == ""  # llama.cpp's chatter stays out of the way


def test_a_keyless_one_shot_loads_the_model_in_a_worker_started_early(tmp_path: Path) -> None:
    completed = run_ironhive(
        "-p", "Say hello", "-o", "json", cwd=tmp_path, home=tmp_path, env={"IRONHIVE_LOG_LEVEL": "info"}, timeout=300
    )

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["content"].strip() != ""
    started = re.search(r"worker (\d+) started early", completed.stderr)
    taken = re.search(r"took over worker (\d+), started early", completed.stderr)
    assert started is not None and taken is not None, completed.stderr
    assert started[1] == taken[1]  # the one worker: started before the agent was built, used by its client


def test_a_run_with_another_provider_starts_no_local_worker(tmp_path: Path) -> None:
    completed = run_ironhive(
        "-p",
        "Say hello",
        "--provider",
        "scripted",
        "-o",
        "json",
        cwd=tmp_path,
        home=tmp_path,
        env={"IRONHIVE_LOG_LEVEL": "info"},
    )

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["content"] == "You said: Say hello"
    assert "started early" not in completed.stderr and "llamacpp" not in completed.stderr
