"""The ModelLister adapters through the official SDKs against loopback servers, and over local GGUF files."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from ironhive.adapters.anthropic.models import AnthropicModelLister
from ironhive.adapters.google.models import GoogleGenAIModelLister
from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.adapters.llamacpp.models import BUNDLED_DISPLAY_NAME, LlamaCppModelLister, local_model_id
from ironhive.adapters.openai.models import OpenAIModelLister
from ironhive.domain.errors import ConfigurationError, ProviderError
from ironhive.ports.models import ListedModel, ModelLister
from tests.support.anthropic_server import LoopbackAnthropicServer
from tests.support.gemini_server import LoopbackGeminiServer
from tests.support.openai_server import LoopbackOpenAIServer

OPENAI_KEY = "sk-loopback-secret-key-0123456789"
ANTHROPIC_KEY = "sk-ant-loopback-secret-key-0123456789"
GEMINI_KEY = "AIzaSy-loopback-secret-key-0123456789"


def closed_port_url(path: str = "") -> str:
    """A loopback URL nothing listens on (the port was free a moment ago), so requests are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


@pytest.fixture
def openai_server() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer(models=("gpt-4o-mini", "gpt-4o", "text-embedding-3-small")) as running:
        yield running


@pytest.fixture
def anthropic_server() -> Iterator[LoopbackAnthropicServer]:
    models = ("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-3-5-haiku-20241022")
    with LoopbackAnthropicServer(api_key=ANTHROPIC_KEY, models=models) as running:
        yield running


@pytest.fixture
def gemini_server() -> Iterator[LoopbackGeminiServer]:
    with LoopbackGeminiServer(api_key=GEMINI_KEY, models=("gemini-2.5-flash", "gemini-2.5-pro")) as running:
        yield running


# -- OpenAI-compatible -----------------------------------------------------------------------------------------------


async def test_openai_lister_reports_the_servers_models_as_api_entries(openai_server: LoopbackOpenAIServer) -> None:
    lister = OpenAIModelLister(api_key=OPENAI_KEY, base_url=openai_server.base_url, provider_name="lmstudio")
    assert isinstance(lister, ModelLister)
    listed = await lister.list_models()
    assert listed == [
        ListedModel(model_id="gpt-4o-mini", provider="lmstudio"),
        ListedModel(model_id="gpt-4o", provider="lmstudio"),
        ListedModel(model_id="text-embedding-3-small", provider="lmstudio"),
    ]
    assert {model.source for model in listed} == {"api"}


async def test_openai_lister_needs_no_key_for_a_local_server(openai_server: LoopbackOpenAIServer) -> None:
    listed = await OpenAIModelLister(api_key="", base_url=openai_server.base_url, provider_name="ollama").list_models()
    assert [model.model_id for model in listed] == ["gpt-4o-mini", "gpt-4o", "text-embedding-3-small"]


async def test_openai_lister_translates_an_unreachable_server_without_the_key() -> None:
    lister = OpenAIModelLister(api_key=OPENAI_KEY, base_url=closed_port_url("/v1"), provider_name="gpustack")
    with pytest.raises(ProviderError) as caught:
        await lister.list_models()
    assert caught.value.retryable
    assert caught.value.provider == "gpustack"
    assert OPENAI_KEY not in str(caught.value)


def test_openai_lister_checks_its_settings() -> None:
    with pytest.raises(ConfigurationError, match="API key"):
        OpenAIModelLister(api_key="")
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAIModelLister(api_key=OPENAI_KEY, timeout=0)


# -- Anthropic ---------------------------------------------------------------------------------------------------------


async def test_anthropic_lister_follows_every_page(anthropic_server: LoopbackAnthropicServer) -> None:
    lister = AnthropicModelLister(api_key=ANTHROPIC_KEY, base_url=anthropic_server.base_url + "/v1", page_size=2)
    listed = await lister.list_models()
    assert [model.model_id for model in listed] == [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5-20251001",
        "claude-3-5-haiku-20241022",
    ]
    assert listed[0] == ListedModel(
        model_id="claude-sonnet-4-5-20250929",
        provider="anthropic",
        display_name="Claude Sonnet 4 5 20250929",
        context_window=200_000,
    )


async def test_anthropic_lister_reports_a_refused_key_without_it(anthropic_server: LoopbackAnthropicServer) -> None:
    wrong = "sk-ant-wrong-key-0123456789"
    with pytest.raises(ProviderError) as caught:
        await AnthropicModelLister(api_key=wrong, base_url=anthropic_server.base_url).list_models()
    assert caught.value.status == 401
    assert not caught.value.retryable
    assert wrong not in str(caught.value)


def test_anthropic_lister_checks_its_settings() -> None:
    with pytest.raises(ConfigurationError, match="API key"):
        AnthropicModelLister(api_key="")
    with pytest.raises(ConfigurationError, match="page size"):
        AnthropicModelLister(api_key=ANTHROPIC_KEY, page_size=0)


# -- Google ------------------------------------------------------------------------------------------------------------


async def test_google_lister_strips_the_models_prefix(gemini_server: LoopbackGeminiServer) -> None:
    listed = await GoogleGenAIModelLister(api_key=GEMINI_KEY, base_url=gemini_server.base_url).list_models()
    assert listed == [
        ListedModel(
            model_id="gemini-2.5-flash", provider="google", display_name="gemini-2.5-flash", context_window=1_048_576
        ),
        ListedModel(
            model_id="gemini-2.5-pro", provider="google", display_name="gemini-2.5-pro", context_window=1_048_576
        ),
    ]


async def test_google_lister_accepts_a_versioned_base_url(gemini_server: LoopbackGeminiServer) -> None:
    base_url = gemini_server.base_url.rstrip("/") + "/v1beta/"
    listed = await GoogleGenAIModelLister(api_key=GEMINI_KEY, base_url=base_url).list_models()
    assert [model.model_id for model in listed] == ["gemini-2.5-flash", "gemini-2.5-pro"]


async def test_google_lister_reports_a_refused_key_without_it(gemini_server: LoopbackGeminiServer) -> None:
    wrong = "AIzaSy-wrong-key-0123456789"
    with pytest.raises(ProviderError) as caught:
        await GoogleGenAIModelLister(api_key=wrong, base_url=gemini_server.base_url).list_models()
    assert caught.value.status == 400
    assert wrong not in str(caught.value)


async def test_google_lister_reports_an_unreachable_server() -> None:
    with pytest.raises(ProviderError) as caught:
        await GoogleGenAIModelLister(api_key=GEMINI_KEY, base_url=closed_port_url()).list_models()
    assert caught.value.retryable
    assert GEMINI_KEY not in str(caught.value)


# -- local GGUF files --------------------------------------------------------------------------------------------------


def write_gguf(path: Path, context_length: int) -> Path:
    """A GGUF file holding just the header keys the lister reads (architecture and trained context)."""

    def text(value: str) -> bytes:
        data = value.encode()
        return struct.pack("<Q", len(data)) + data

    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 2)
    header += text("general.architecture") + struct.pack("<I", 8) + text("llama")
    header += text("llama.context_length") + struct.pack("<II", 4, context_length)
    path.write_bytes(header + b"\0" * 64)
    return path


def bundled_or_skip() -> Path:
    try:
        return bundled_model_path()
    except ConfigurationError:
        pytest.skip("the bundled model (ironhive[local]) is not installed")


async def test_local_lister_lists_files_with_size_and_trained_context(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "tiny-model.Q8_0.gguf", 4096)
    listed = await LlamaCppModelLister(model_files=[model, model], include_bundled=False).list_models()
    assert listed == [
        ListedModel(
            model_id="tiny-model.Q8_0",
            provider="lmsupply",
            context_window=4096,
            source="cached",
            local_path=model.resolve(),
            size_bytes=model.stat().st_size,
        )
    ]


async def test_local_lister_adds_the_bundled_model(tmp_path: Path) -> None:
    bundled = bundled_or_skip()
    model = write_gguf(tmp_path / "mine.gguf", 2048)
    listed = await LlamaCppModelLister(model_files=[model]).list_models()
    assert [entry.model_id for entry in listed] == ["mine", local_model_id(bundled)]
    assert listed[1].display_name == BUNDLED_DISPLAY_NAME
    assert (listed[1].local_path, listed[1].size_bytes) == (bundled, bundled.stat().st_size)
    assert listed[1].context_window is not None and listed[1].context_window > 0


async def test_local_lister_reports_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone.gguf"
    with pytest.raises(ConfigurationError, match="does not exist"):
        await LlamaCppModelLister(model_files=[missing], include_bundled=False).list_models()


async def test_a_file_that_is_not_gguf_is_listed_without_a_context(tmp_path: Path) -> None:
    other = tmp_path / "notes.bin"
    other.write_bytes(b"not a model")
    (listed,) = await LlamaCppModelLister(model_files=[other], include_bundled=False).list_models()
    assert (listed.model_id, listed.context_window, listed.size_bytes) == ("notes", None, 11)
