"""Local model resolution (path, huggingface_hub download from a loopback Hub, bundled) and context sizing by RAM."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants

from ironhive.adapters.llamacpp import client as client_module
from ironhive.adapters.llamacpp.context_length import auto_context_length, total_ram_bytes
from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.adapters.llamacpp.model_resolution import (
    cached_model_path,
    default_model_cache,
    resolve_model_path,
)
from ironhive.domain.errors import ConfigurationError, ProviderError
from tests.support.hugging_face_hub import COMMIT, Hub

GIB = 1 << 30
REPO = "someone/tiny-GGUF"
FILE = "tiny.Q4_0.gguf"
CONTENT = os.urandom(2 * 1024 * 1024 + 12345)
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx would send even loopback requests through a proxy from the environment."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")


@pytest.fixture(autouse=True)
def no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub would fetch its agent-harness list from the real Hub (HF_ENDPOINT is read at its import)."""
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_TELEMETRY", True)


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    state = Hub()
    state.add(REPO, FILE, CONTENT)
    async with state.running() as running:
        yield running


async def resolve(
    cache: Path,
    environ: dict[str, str],
    *,
    repo: str | None = REPO,
    file: str | None = FILE,
    progress: Callable[[int, int | None], None] | None = None,
    legacy: Path | None = None,
) -> Path:
    return await asyncio.to_thread(
        lambda: resolve_model_path(
            model_path=None,
            hf_repo=repo,
            hf_file=file,
            cache_dir=cache,
            legacy_dir=legacy,
            environ=environ,
            progress=progress,
        )
    )


def leftovers(cache: Path) -> list[str]:
    """The cache's files apart from huggingface_hub's bookkeeping (locks, refs, the CACHEDIR.TAG)."""
    return sorted(
        str(path.relative_to(cache))
        for path in cache.rglob("*")
        if path.is_file() and ".locks" not in path.parts and "refs" not in path.parts and path.name != "CACHEDIR.TAG"
    )


async def test_first_call_downloads_into_the_hugging_face_cache_with_progress_then_the_cache_serves(
    hub: Hub, tmp_path: Path
) -> None:
    seen: list[tuple[int, int | None]] = []

    path = await resolve(
        tmp_path, {"HF_ENDPOINT": hub.endpoint + "/"}, progress=lambda done, total: seen.append((done, total))
    )

    assert path == tmp_path / "models--someone--tiny-GGUF" / "snapshots" / COMMIT / FILE
    assert path.read_bytes() == CONTENT
    assert path.resolve().parent.name == "blobs"  # the Hub cache's layout: snapshots link to content blobs
    assert path == cached_model_path(REPO, FILE, cache_dir=tmp_path)
    assert [(r.method, r.path) for r in hub.requests] == [
        ("HEAD", f"/{REPO}/resolve/main/{FILE}"),
        ("GET", f"/{REPO}/resolve/main/{FILE}"),
    ]
    assert seen[0] == (0, len(CONTENT)) and seen[-1] == (len(CONTENT), len(CONTENT))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert not [name for name in leftovers(tmp_path) if name.endswith(".incomplete")]

    again = await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, progress=lambda done, total: seen.append((0, 0)))
    assert again == path
    assert len(hub.requests) == 2  # no request at all the second time
    assert (0, 0) not in seen


async def test_a_cached_file_needs_no_network_even_online(hub: Hub, tmp_path: Path) -> None:
    cached = await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint})

    # Port 9 on loopback: nothing listens; any attempt to connect would fail the call.
    assert await resolve(tmp_path, {"HF_ENDPOINT": "http://127.0.0.1:9"}) == cached


async def test_a_model_downloaded_by_an_earlier_version_is_still_used(tmp_path: Path) -> None:
    legacy = default_model_cache(tmp_path / "home")
    old = legacy / "someone--tiny-GGUF" / "q4" / FILE
    old.parent.mkdir(parents=True)
    old.write_bytes(b"GGUF")

    found = await resolve(tmp_path / "hf", {"HF_ENDPOINT": "http://127.0.0.1:9"}, file=f"q4/{FILE}", legacy=legacy)
    assert found == old
    assert cached_model_path(REPO, f"q4/{FILE}", cache_dir=tmp_path / "hf", legacy_dir=legacy) == old


async def test_offline_serves_the_cache_and_never_the_network(hub: Hub, tmp_path: Path) -> None:
    offline = {"HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "1"}

    with pytest.raises(ConfigurationError, match="HF_HUB_OFFLINE") as raised:
        await resolve(tmp_path, offline)
    assert FILE in str(raised.value) and REPO in str(raised.value)
    assert hub.requests == []

    downloaded = await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint})
    assert await resolve(tmp_path, {**offline, "HF_HUB_OFFLINE": "true"}) == downloaded
    assert len(hub.requests) == 2  # the download's HEAD and GET; offline asked nothing


async def test_hf_token_is_sent_as_the_bearer_token_but_not_to_the_cdn(hub: Hub, tmp_path: Path) -> None:
    hub.add(REPO, "moved.gguf", CONTENT[::-1], moved=True)  # other content: the same content would share its blob

    await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_loopback_secret"})
    path = await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_loopback_secret"}, file="moved.gguf")

    assert path.read_bytes() == CONTENT[::-1]
    on_hub = [r for r in hub.requests if r.host == "127.0.0.1"]
    on_cdn = [r for r in hub.requests if r.host != "127.0.0.1"]
    assert [r.headers.get("authorization") for r in on_hub] == ["Bearer hf_loopback_secret"] * 3
    assert [(r.method, r.path, r.headers.get("authorization")) for r in on_cdn] == [
        ("GET", f"/cdn/{REPO}/resolve/main/moved.gguf", None)
    ]
    assert "ironhive" in on_hub[0].headers["user-agent"]


async def test_a_dropped_download_resumes_with_a_range_request(hub: Hub, tmp_path: Path) -> None:
    # huggingface_hub writes what it received in whole read chunks: resuming shows past the first chunk.
    chunk = hf_constants.DOWNLOAD_CHUNK_SIZE
    big = os.urandom(chunk + chunk // 2 + 7)
    hub.add(REPO, "big.gguf", big)
    hub.hang_ups.append(chunk + chunk // 4)
    seen: list[tuple[int, int | None]] = []

    path = await resolve(
        tmp_path,
        {"HF_ENDPOINT": hub.endpoint},
        file="big.gguf",
        progress=lambda done, total: seen.append((done, total)),
    )

    assert path.read_bytes() == big
    assert [r.headers.get("range") for r in hub.seen("GET")] == [None, f"bytes={chunk}-"]
    assert seen[0] == (0, len(big)) and (chunk, len(big)) in seen and seen[-1] == (len(big), len(big))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


async def test_a_download_that_keeps_failing_is_a_retryable_error_and_leaves_no_partial_file(
    hub: Hub, tmp_path: Path
) -> None:
    hub.hang_ups.extend([len(CONTENT) // 3] + [0] * 10)

    with pytest.raises(ProviderError, match=FILE) as raised:
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint})

    assert raised.value.retryable
    assert [name for name in leftovers(tmp_path) if "blobs" in name or "snapshots" in name] == []
    # The next attempt starts afresh and succeeds.
    hub.hang_ups.clear()
    assert (await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint})).read_bytes() == CONTENT


async def test_a_missing_file_is_a_configuration_error_naming_it(hub: Hub, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as raised:
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="nothing-here.gguf")

    assert "nothing-here.gguf" in str(raised.value) and REPO in str(raised.value) and "404" in str(raised.value)
    assert [name for name in leftovers(tmp_path) if "blobs" in name or "snapshots" in name] == []


async def test_access_and_request_errors(hub: Hub, tmp_path: Path) -> None:
    hub.fail(REPO, "gated.gguf", 401, "GatedRepo")
    hub.fail(REPO, "odd.gguf", 400)
    with pytest.raises(ConfigurationError, match="gated or private"):
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="gated.gguf")
    with pytest.raises(ProviderError) as raised:
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="odd.gguf")
    assert raised.value.status == 400 and not raised.value.retryable


async def test_an_endpoint_that_is_not_a_hub_is_named(tmp_path: Path) -> None:
    async def plain_web_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(plain_web_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ProviderError, match="X-Repo-Commit"):
            await resolve(tmp_path, {"HF_ENDPOINT": f"http://127.0.0.1:{port}"})
    finally:
        server.close()
        await server.wait_closed()


async def test_a_configured_path_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    model = tmp_path / "models" / "mine.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF")

    found = resolve_model_path(
        model_path="~/models/mine.gguf", hf_repo=REPO, hf_file=FILE, cache_dir=tmp_path, environ={}, progress=None
    )
    assert found == model
    with pytest.raises(ConfigurationError, match=r"models/other\.gguf"):
        resolve_model_path(
            model_path="~/models/other.gguf", hf_repo=None, hf_file=None, cache_dir=tmp_path, environ={}, progress=None
        )


def test_without_configuration_the_bundled_model_runs(tmp_path: Path) -> None:
    found = resolve_model_path(
        model_path=None, hf_repo=None, hf_file=None, cache_dir=tmp_path, environ={}, progress=None
    )

    assert found == bundled_model_path()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("repo", "file", "complaint"),
    [
        (REPO, None, "both"),
        (None, FILE, "both"),
        ("no-owner", FILE, "owner/name"),
        ("a/b/c", FILE, "owner/name"),
        ("../x", FILE, "owner/name"),
        (REPO, "../escape.gguf", "inside the repository"),
        (REPO, "/etc/passwd", "inside the repository"),
    ],
)
async def test_malformed_hugging_face_settings(
    repo: str | None, file: str | None, complaint: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        await resolve(tmp_path, {"HF_ENDPOINT": "http://127.0.0.1:9"}, repo=repo, file=file)


def test_nothing_cached_is_none_and_the_legacy_folder_is_in_the_home(tmp_path: Path) -> None:
    assert cached_model_path(REPO, "q4/tiny.gguf", cache_dir=tmp_path) is None
    assert default_model_cache(tmp_path) == tmp_path / ".ironhive" / "models"


# --- context length ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ram", "context"),
    [
        (None, 16384),
        (0, 8192),
        (4 * GIB - 1, 8192),
        (4 * GIB, 16384),
        (8 * GIB - 1, 16384),
        (8 * GIB, 32768),
        (16 * GIB - 1, 32768),
        (16 * GIB, 65536),
        (32 * GIB - 1, 65536),
        (32 * GIB, 131072),
        (512 * GIB, 131072),
    ],
)
def test_auto_context_length_by_ram(ram: int | None, context: int) -> None:
    assert auto_context_length(ram) == context


def test_total_ram_reads_meminfo_then_sysconf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683584 kB\nMemFree:        1 kB\n")
    assert total_ram_bytes(meminfo) == 24683584 * 1024

    real = total_ram_bytes()
    assert real is not None and real > 0

    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1000}[name])
    assert total_ram_bytes(tmp_path / "missing") == 4096 * 1000
    meminfo.write_text("MemTotal: lots\n")
    assert total_ram_bytes(meminfo) == 4096 * 1000

    def unreadable(name: str) -> int:
        raise ValueError(name)

    monkeypatch.setattr(os, "sysconf", unreadable)
    assert total_ram_bytes(tmp_path / "missing") is None


@pytest.mark.parametrize(("ram", "expected"), [(2 * GIB, 8192), (64 * GIB, 8192), (None, 8192)])
def test_client_context_is_auto_sized_then_capped_by_the_trained_context(
    ram: int | None, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "total_ram_bytes", lambda: ram)

    # The bundled model was trained on 8192 tokens, below every RAM tier.
    assert client_module.LlamaCppChatClient().context_size == expected
    assert client_module.LlamaCppChatClient(n_ctx=2048).context_size == 2048


@pytest.mark.parametrize(("ram", "expected"), [(2 * GIB, 8192), (6 * GIB, 8192), (None, 8192)])
def test_a_model_without_a_stated_context_gets_at_most_8192_unless_configured(
    ram: int | None, expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "total_ram_bytes", lambda: ram)
    model = tmp_path / "bare.gguf"
    model.write_bytes(b"not a GGUF header")

    assert client_module.LlamaCppChatClient(model_path=model).context_size == expected
    assert client_module.LlamaCppChatClient(model_path=model, n_ctx=40_000).context_size == 40_192


def test_auto_size_applies_below_the_trained_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "total_ram_bytes", lambda: 2 * GIB)
    monkeypatch.setattr(client_module, "gguf_trained_context", lambda path: 131_072)

    assert client_module.LlamaCppChatClient().context_size == 8192  # 2 GiB of RAM: 8192
    monkeypatch.setattr(client_module, "total_ram_bytes", lambda: 20 * GIB)
    assert client_module.LlamaCppChatClient().context_size == 65536
    assert client_module.LlamaCppChatClient(n_ctx=100_000).context_size == 100_096


def test_the_hub_library_is_imported_with_its_telemetry_off_unless_the_user_chose(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from ironhive.adapters.llamacpp.model_resolution import cached_model_path\n"
        f"cached_model_path('owner/name', 'model.gguf', cache_dir={str(tmp_path)!r}, legacy_dir=None)\n"
        "from huggingface_hub import constants\n"
        "print(constants.HF_HUB_DISABLE_TELEMETRY)\n"
    )
    environment = {key: value for key, value in os.environ.items() if "TELEMETRY" not in key}
    quiet = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True)
    chosen = subprocess.run(
        [sys.executable, "-c", probe],
        env={**environment, "HF_HUB_DISABLE_TELEMETRY": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert (quiet.stdout.strip(), chosen.stdout.strip()) == ("True", "False")
