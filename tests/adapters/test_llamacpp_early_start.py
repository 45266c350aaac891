"""A worker started early is taken over by the client with the same load settings; any other is ended unused.

The workers run a stand-in ``llama_cpp`` (put on their PYTHONPATH), so these tests need no model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ironhive.adapters.llamacpp import early_start
from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.ports.chat import ChatMessage, ChatOptions, Role
from tests.adapters.diagnostics.test_local_inference_check import ANSWERS
from tests.adapters.test_llamacpp_worker import fake_llama_cpp

HELLO = (ChatMessage.of_text(Role.USER, "hi"),)


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", ANSWERS)))
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(2044))
    yield path
    early_start.discard_all()


def client_for(model: Path, tmp_path: Path, n_ctx: int = 256) -> LlamaCppChatClient:
    return LlamaCppChatClient(model_path=model, n_ctx=n_ctx, prefix_cache_dir=tmp_path / "cache")


def the_waiting_worker() -> early_start.EarlyWorker:
    assert early_start.waiting() == 1
    return early_start._waiting[0]


async def test_the_first_call_takes_over_the_worker_started_early(model: Path, tmp_path: Path) -> None:
    client_for(model, tmp_path).start_early()  # as the CLI does it: a throwaway client with the run's settings
    early = the_waiting_worker()
    client = client_for(model, tmp_path)
    try:
        response = await client.get_response(HELLO, ChatOptions())

        assert response.message.text == "OK"
        assert early_start.waiting() == 0
        assert client._worker is early.worker  # no second worker was started
        assert client.load_parameters is not None and client.load_parameters["n_ctx"] == 256
    finally:
        client.close()


async def test_an_early_worker_with_other_settings_is_ended_and_a_fitting_one_started(
    model: Path, tmp_path: Path
) -> None:
    client_for(model, tmp_path, n_ctx=256).start_early()
    early = the_waiting_worker()
    client = client_for(model, tmp_path, n_ctx=512)
    try:
        response = await client.get_response(HELLO, ChatOptions())

        assert response.message.text == "OK"
        assert early_start.waiting() == 0
        assert client._worker is not early.worker
        assert not early.worker.alive and early.worker.exit_status(timeout=10) is not None
    finally:
        client.close()


def test_an_early_worker_nobody_takes_is_ended(model: Path, tmp_path: Path) -> None:
    client_for(model, tmp_path).start_early()
    early = the_waiting_worker()

    early_start.discard_all()  # registered to run at exit

    assert early_start.waiting() == 0
    assert early.worker.exit_status(timeout=10) is not None


def test_a_client_with_its_own_worker_command_starts_nothing_early(model: Path, tmp_path: Path) -> None:
    LlamaCppChatClient(model_path=model, n_ctx=256, worker_command=["false"]).start_early()

    assert early_start.waiting() == 0
