"""A real OpenAI-compatible server no one here wrote — llama_cpp.server on loopback with the bundled model —
used through the OpenAI-compatible adapter and through the real CLI."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp.server")

from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.ports.chat import ChatMessage, ChatOptions, Role
from tests.support.cli import run_ironhive

pytestmark = pytest.mark.local_model


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(bundled_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--model_alias",
            "smollm2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("llama_cpp.server did not start") from None
                time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_adapter_against_llama_cpp_server(server_url: str) -> None:
    client = OpenAIChatClient(api_key="none", model="smollm2", base_url=server_url)
    messages = [ChatMessage.of_text(Role.USER, "Say hello")]
    options = ChatOptions(max_output_tokens=24, temperature=0.0)
    try:
        whole = await client.get_response(messages, options)
        pieces = [update async for update in client.get_streaming_response(messages, options)]
    finally:
        await client.aclose()
    assert whole.message.text.strip()
    streamed = "".join(update.text_delta for update in pieces)
    assert streamed.strip() and sum(1 for update in pieces if update.text_delta) > 1
    assert whole.usage is not None and (whole.usage.input_tokens or 0) > 0


def test_cli_against_llama_cpp_server(server_url: str, tmp_path: Path) -> None:
    completed = run_ironhive(
        "-p",
        "Say hello",
        "-o",
        "json",
        cwd=tmp_path,
        home=tmp_path,
        env={"OPENAI_API_KEY": "none", "OPENAI_MODEL": "smollm2", "OPENAI_ENDPOINT": server_url},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["content"].strip()
