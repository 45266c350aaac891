"""A one-shot on a Hugging Face model: the real ``ironhive`` downloads it from a loopback Hub into the HF cache, with
plain progress lines on a non-terminal stderr, then answers; offline, the next run answers from the cache alone."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive
from tests.support.hugging_face_hub import COMMIT, Hub

pytest.importorskip("llama_cpp")
pytest.importorskip("huggingface_hub")

pytestmark = pytest.mark.local_model

REPO = "someone/smol-GGUF"
FILE = "smol.Q4_1.gguf"


async def test_the_first_run_downloads_with_progress_and_an_offline_run_uses_the_cache(tmp_path: Path) -> None:
    from ironhive.adapters.llamacpp.model_files import bundled_model_path

    model = bundled_model_path().read_bytes()
    config = tmp_path / ".ironhive" / "config.yaml"
    config.parent.mkdir()
    config.write_text(f"lmsupply:\n  huggingFaceRepo: {REPO}\n  huggingFaceFile: {FILE}\n")
    hub = Hub()
    hub.add(REPO, FILE, model)

    async with hub.running():
        environment = {
            "HF_ENDPOINT": hub.endpoint,
            "HF_HOME": str(tmp_path / "hf"),
            "HF_TOKEN": "hf_e2e_token",
            "HF_HUB_DISABLE_TELEMETRY": "1",  # else huggingface_hub also fetches its agent-harness list
        }
        first = await asyncio.to_thread(
            run_ironhive,
            *("-p", "Say hello", "--provider", "local", "-o", "json"),
            cwd=tmp_path,
            home=tmp_path,
            env=environment,
            timeout=300,
        )
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["content"].strip() != ""
        lines = first.stderr.splitlines()
        assert f"Downloading {FILE} ({len(model) / (1 << 20):.1f} MiB)…" in lines, first.stderr
        steps = [
            line
            for line in lines
            if re.fullmatch(rf"Downloading {re.escape(FILE)}: [\d.]+ MiB of [\d.]+ MiB \(\d+%\)", line)
        ]
        assert len(steps) >= 5, first.stderr  # a line at every tenth (the library reports 10 MiB reads)
        assert f"Downloading {FILE}: done, {len(model) / (1 << 20):.1f} MiB" in lines, first.stderr
        cached = tmp_path / "hf" / "hub" / "models--someone--smol-GGUF" / "snapshots" / COMMIT / FILE
        assert cached.read_bytes() == model
        assert [(r.method, r.headers.get("authorization")) for r in hub.requests] == [
            ("HEAD", "Bearer hf_e2e_token"),
            ("GET", "Bearer hf_e2e_token"),
        ]

        offline = await asyncio.to_thread(
            run_ironhive,
            *("-p", "Say hello", "--provider", "local", "-o", "json"),
            cwd=tmp_path,
            home=tmp_path,
            env={**environment, "HF_HUB_OFFLINE": "1"},
            timeout=300,
        )
        assert offline.returncode == 0, offline.stderr
        assert json.loads(offline.stdout)["content"].strip() != ""
        assert "Downloading" not in offline.stderr
        assert len(hub.requests) == 2  # the offline run asked the Hub nothing
