"""``ironhive models [-p PROVIDER] [--json]`` in a real process, against loopback OpenAI-compatible servers.

Only loopback providers are configured (the environment is cleaned of every provider variable), so nothing is sent
beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.cli.models_command import format_context, format_price
from ironhive.domain.context.catalog import BUILTIN_MODELS
from ironhive.domain.errors import ConfigurationError
from tests.support.cli import run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer

OPENAI_KEY = "sk-loopback-models-secret-0123456789"
LOCAL_OFF = {"LMSUPPLY_ENABLED": "false"}
KEYS = [
    "modelId",
    "provider",
    "displayName",
    "contextWindow",
    "inputPricePerMillion",
    "outputPricePerMillion",
    "source",
    "isDefault",
    "localPath",
    "sizeBytes",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def server() -> Iterator[LoopbackOpenAIServer]:
    models = ("text-embedding-3-small", "gpt-4o", "gpt-4o-mini", "qwen2.5-7b-instruct")
    with LoopbackOpenAIServer(models=models) as running:
        yield running


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def openai_env(endpoint: str, model: str = "gpt-4o") -> dict[str, str]:
    return {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_MODEL": model, "OPENAI_ENDPOINT": endpoint}


def lmstudio_env(endpoint: str, model: str = "qwen2.5-7b-instruct") -> dict[str, str]:
    return {"LMSTUDIO_ENABLED": "true", "LMSTUDIO_ENDPOINT": endpoint, "LMSTUDIO_MODEL": model}


def models(*args: str, home: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_ironhive("models", *args, cwd=cwd, home=home, env=env, timeout=60)


def test_json_lists_every_configured_provider_in_order(
    tmp_path: Path, workspace: Path, server: LoopbackOpenAIServer, snapshot: SnapshotAssertion
) -> None:
    env = {**openai_env(server.base_url), **lmstudio_env(server.base_url, "local-only-model"), **LOCAL_OFF}
    completed = models("--json", home=tmp_path, cwd=workspace, env=env)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == snapshot
    listed = json.loads(completed.stdout)
    assert all(list(entry) == KEYS for entry in listed)
    assert [entry["provider"] for entry in listed] == ["openai"] * 4 + ["lmstudio"] * 5
    defaults = [(entry["provider"], entry["modelId"], entry["source"]) for entry in listed if entry["isDefault"]]
    assert defaults == [("openai", "gpt-4o", "api"), ("lmstudio", "local-only-model", "static")]
    gpt_4o = listed[0]
    assert (gpt_4o["contextWindow"], gpt_4o["inputPricePerMillion"], gpt_4o["outputPricePerMillion"]) == (
        128_000,
        2.5,
        10.0,
    )
    assert completed.stdout.startswith("[\n  {\n")  # indented
    assert completed.stderr == ""


def test_text_is_a_table_per_provider_when_piped(
    tmp_path: Path, workspace: Path, server: LoopbackOpenAIServer, snapshot: SnapshotAssertion
) -> None:
    env = {**openai_env(server.base_url, "gpt-4o-mini"), **lmstudio_env(server.base_url), **LOCAL_OFF}
    completed = models(home=tmp_path, cwd=workspace, env=env)
    assert completed.returncode == 0, completed.stderr
    assert "\x1b[" not in completed.stdout
    assert completed.stdout == snapshot
    blocks = completed.stdout.split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == ["openai", "lmstudio"]
    header = blocks[0].splitlines()[1].split()
    assert header == ["Model", "ID", "Display", "Name", "Context", "Input", "$/M", "Output", "$/M", "Source", "Default"]


def test_a_failing_api_falls_back_to_the_catalog_or_the_configured_model(tmp_path: Path, workspace: Path) -> None:
    dead = closed_port_url()
    env = {**openai_env(dead, "gpt-4.1"), **lmstudio_env(dead), **LOCAL_OFF}
    completed = models("--json", home=tmp_path, cwd=workspace, env=env)
    assert completed.returncode == 0, completed.stderr
    listed = json.loads(completed.stdout)
    openai = [entry for entry in listed if entry["provider"] == "openai"]
    assert {entry["source"] for entry in openai} == {"static"}
    assert openai[0]["modelId"] == "gpt-4.1" and openai[0]["isDefault"]
    catalog_openai = {name for name in BUILTIN_MODELS if name.startswith(("gpt-", "chatgpt-", "o1", "o3", "o4"))}
    assert {entry["modelId"] for entry in openai} == catalog_openai
    lmstudio = [entry for entry in listed if entry["provider"] == "lmstudio"]
    assert [(e["modelId"], e["source"], e["isDefault"]) for e in lmstudio] == [("qwen2.5-7b-instruct", "static", True)]
    warnings = completed.stderr.splitlines()
    assert len(warnings) == 2
    assert warnings[0].startswith("Warning: could not list the models of openai: could not connect to openai")
    assert warnings[0].endswith("; showing the built-in catalog instead")
    assert warnings[1].startswith("Warning: could not list the models of lmstudio: could not connect to lmstudio")
    assert warnings[1].endswith("; showing the configured model instead")
    assert OPENAI_KEY not in completed.stderr + completed.stdout


def test_provider_option_lists_one_provider_and_accepts_aliases(
    tmp_path: Path, workspace: Path, server: LoopbackOpenAIServer
) -> None:
    env = {**openai_env(server.base_url), **lmstudio_env(server.base_url)}
    only = models("-p", "LMStudio", "--json", home=tmp_path, cwd=workspace, env=env)
    assert only.returncode == 0, only.stderr
    assert {entry["provider"] for entry in json.loads(only.stdout)} == {"lmstudio"}
    long_form = models("--provider", "openai", "--json", home=tmp_path, cwd=workspace, env=env)
    assert {entry["provider"] for entry in json.loads(long_form.stdout)} == {"openai"}


def test_unknown_and_unconfigured_providers_fail(tmp_path: Path, workspace: Path) -> None:
    unknown = models("-p", "nonesuch", home=tmp_path, cwd=workspace, env=LOCAL_OFF)
    assert unknown.returncode == 1
    assert unknown.stdout == ""
    assert unknown.stderr == (
        "Error: Provider 'nonesuch' not found. Available: gpustack, openai, anthropic, google, xai, ollama, lmstudio, "
        "azure, lmsupply, scripted\n"
    )
    unconfigured = models("-p", "claude", "--json", home=tmp_path, cwd=workspace, env=LOCAL_OFF)
    assert (unconfigured.returncode, unconfigured.stdout) == (1, "")
    assert unconfigured.stderr == "Error: Provider 'claude' is not available or configured.\n"


def test_with_nothing_configured_but_local_the_bundled_model_is_listed(tmp_path: Path, workspace: Path) -> None:
    try:
        bundled = bundled_model_path()
    except ConfigurationError:
        pytest.skip("the bundled model (ironhive[local]) is not installed")
    completed = models("--json", home=tmp_path, cwd=workspace, env={})
    assert completed.returncode == 0, completed.stderr
    (entry,) = json.loads(completed.stdout)
    assert entry["provider"] == "lmsupply"
    assert entry["modelId"] == bundled.stem
    assert (entry["source"], entry["isDefault"]) == ("cached", True)
    assert (entry["localPath"], entry["sizeBytes"]) == (str(bundled), bundled.stat().st_size)
    assert entry["contextWindow"] > 0
    aliased = models("-p", "local", "--json", home=tmp_path, cwd=workspace, env={})
    assert json.loads(aliased.stdout) == [entry]


def test_a_configured_model_path_is_listed_as_the_local_default(tmp_path: Path, workspace: Path) -> None:
    model = workspace / "my-model.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 60)  # unreadable header: listed without a context window
    config = tmp_path / ".ironhive" / "config.yaml"
    config.parent.mkdir()
    config.write_text(f"lmsupply:\n  modelPath: {json.dumps(str(model))}\n", encoding="utf-8")
    completed = models("-p", "lmsupply", "--json", home=tmp_path, cwd=workspace, env={})
    assert completed.returncode == 0, completed.stderr
    listed = json.loads(completed.stdout)
    assert listed[0]["modelId"] == "my-model"
    assert listed[0]["isDefault"]
    assert (listed[0]["localPath"], listed[0]["sizeBytes"], listed[0]["contextWindow"]) == (str(model), 64, None)
    assert all(not entry["isDefault"] for entry in listed[1:])


def test_nothing_configured_lists_nothing(tmp_path: Path, workspace: Path) -> None:
    as_json = models("--json", home=tmp_path, cwd=workspace, env=LOCAL_OFF)
    assert (as_json.returncode, as_json.stdout) == (0, "[]\n")
    text = models(home=tmp_path, cwd=workspace, env=LOCAL_OFF)
    assert (text.returncode, text.stdout) == (0, "No models found.\n")
    assert "No provider is configured" in text.stderr


@pytest.mark.parametrize(
    ("tokens", "shown"),
    [(None, "-"), (512, "512"), (8192, "8K"), (128_000, "128K"), (1_048_576, "1M"), (2_097_152, "2.1M")],
)
def test_context_cells(tokens: int | None, shown: str) -> None:
    assert format_context(tokens) == shown


@pytest.mark.parametrize(
    ("price", "shown"), [(None, "-"), (0.15, "$0.15"), (0.075, "$0.075"), (10.0, "$10.00"), (1250.0, "$1,250.00")]
)
def test_price_cells(price: float | None, shown: str) -> None:
    assert format_price(price) == shown
