"""The bundled local model answers ``ironhive -p "Say hello"`` with no API key and no network."""

from __future__ import annotations

import json
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
