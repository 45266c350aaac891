"""A one-shot run starts the local model's worker early only when it will select the local provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ironhive.adapters.config.loader import load_config
from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.cli.early_local import start_local_model_early
from ironhive.providers import local_inference_available, select_provider

pytestmark = pytest.mark.skipif(not local_inference_available(), reason="needs the `local` extra")

OPENAI = {"OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "gpt-4o-mini", "OPENAI_ENDPOINT": "http://127.0.0.1:9/v1"}


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[LlamaCppChatClient]:
    """The clients whose worker was started early (recorded instead of started)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    clients: list[LlamaCppChatClient] = []
    monkeypatch.setattr(LlamaCppChatClient, "start_early", lambda self, resident=None: clients.append(self))
    return clients


def start(tmp_path: Path, environ: dict[str, str], provider: str | None = None, model: str | None = None) -> bool:
    config = load_config(home=Path.home(), project=tmp_path / "project", environ=environ).config
    return start_local_model_early(config, provider, model, environ)


def test_a_keyless_run_starts_the_worker_with_the_settings_of_the_client_it_builds(
    started: list[LlamaCppChatClient], tmp_path: Path
) -> None:
    assert start(tmp_path, {}) is True
    assert len(started) == 1

    # The client the run builds through the provider registry asks for a worker with exactly these settings, so it
    # takes the early one over (a difference would only cost the early start, never change the run).
    config = load_config(home=Path.home(), project=tmp_path / "project", environ={}).config
    built: Any = select_provider(None, None, config).build()
    assert isinstance(built, LlamaCppChatClient)
    assert built._load_settings() == started[0]._load_settings()


@pytest.mark.parametrize(
    ("environ", "provider"),
    [
        (OPENAI, None),  # a configured remote provider comes first
        (OPENAI, "openai"),
        ({"LMSUPPLY_ENABLED": "false"}, None),  # local inference off: no provider at all
        ({}, "no-such-provider"),
    ],
)
def test_no_worker_when_the_run_will_not_use_the_local_model(
    started: list[LlamaCppChatClient], tmp_path: Path, environ: dict[str, str], provider: str | None
) -> None:
    assert start(tmp_path, environ, provider) is False
    assert started == []


def test_asking_for_the_local_provider_starts_it_even_with_a_key(
    started: list[LlamaCppChatClient], tmp_path: Path
) -> None:
    assert start(tmp_path, OPENAI, "local") is True
    assert len(started) == 1


def test_a_hugging_face_model_not_downloaded_yet_starts_nothing_and_downloads_nothing(
    started: list[LlamaCppChatClient], tmp_path: Path
) -> None:
    config_file = Path.home() / ".ironhive" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("lmsupply:\n  huggingFaceRepo: owner/name\n  huggingFaceFile: model.gguf\n")

    assert start(tmp_path, {}) is False  # the run itself downloads it, with its progress bar
    assert started == []
    assert not (Path.home() / ".ironhive" / "models").exists()


def test_a_missing_model_file_starts_nothing(started: list[LlamaCppChatClient], tmp_path: Path) -> None:
    assert start(tmp_path, {}, "local", str(tmp_path / "missing.gguf")) is False
    assert started == []
