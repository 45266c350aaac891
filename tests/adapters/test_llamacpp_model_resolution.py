"""Local model resolution (path, Hugging Face download against a loopback hub, bundled) and context sizing by RAM."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from ironhive.adapters.llamacpp import client as client_module
from ironhive.adapters.llamacpp.context_length import auto_context_length, total_ram_bytes
from ironhive.adapters.llamacpp.model_files import bundled_model_path
from ironhive.adapters.llamacpp.model_resolution import (
    cached_model_path,
    default_model_cache,
    resolve_model_path,
)
from ironhive.domain.errors import ConfigurationError, ProviderError

GIB = 1 << 30
REPO = "someone/tiny-GGUF"
FILE = "tiny.Q4_0.gguf"
# Larger than one read chunk (1 MiB), so progress is reported more than once.
CONTENT = os.urandom(2 * 1024 * 1024 + 12345)
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib would send even loopback requests through a proxy from the environment."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")


@dataclass
class Hub:
    """A loopback stand-in for the Hugging Face hub: serves files at ``/<repo>/resolve/main/<file>``."""

    endpoint: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    state = Hub(files={f"/{REPO}/resolve/main/{FILE}": CONTENT})

    async def serve(request: web.Request) -> web.StreamResponse:
        state.requests.append(request.path)
        if request.path == f"/{REPO}/resolve/main/moved.gguf":  # the real hub redirects to its CDN
            raise web.HTTPFound(f"/cdn/{FILE}")
        if request.path == f"/cdn/{FILE}":
            return web.Response(body=CONTENT)
        if request.path.endswith("/boom.gguf"):
            return web.Response(status=503)
        if request.path.endswith("/gated.gguf"):
            return web.Response(status=401)
        body = state.files.get(request.path)
        if body is None:
            return web.Response(status=404, text="Entry not found")
        return web.Response(body=body)

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    state.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        await runner.cleanup()


async def resolve(
    cache: Path,
    environ: dict[str, str],
    *,
    repo: str | None = REPO,
    file: str | None = FILE,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    return await asyncio.to_thread(
        lambda: resolve_model_path(
            model_path=None, hf_repo=repo, hf_file=file, cache_dir=cache, environ=environ, progress=progress
        )
    )


def leftovers(cache: Path) -> list[str]:
    return sorted(str(path.relative_to(cache)) for path in cache.rglob("*") if path.is_file())


async def test_first_call_downloads_with_progress_then_the_cache_serves(hub: Hub, tmp_path: Path) -> None:
    seen: list[tuple[int, int | None]] = []

    path = await resolve(
        tmp_path, {"HF_ENDPOINT": hub.endpoint + "/"}, progress=lambda done, total: seen.append((done, total))
    )

    assert path == tmp_path / "someone--tiny-GGUF" / FILE == cached_model_path(tmp_path, REPO, FILE)
    assert path.read_bytes() == CONTENT
    assert hub.requests == [f"/{REPO}/resolve/main/{FILE}"]
    assert seen[0] == (0, len(CONTENT)) and seen[-1] == (len(CONTENT), len(CONTENT))
    assert len(seen) >= 3
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert leftovers(tmp_path) == [f"someone--tiny-GGUF/{FILE}"]

    again = await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, progress=lambda done, total: seen.append((0, 0)))
    assert again == path
    assert len(hub.requests) == 1  # no request at all the second time
    assert (0, 0) not in seen


async def test_a_cached_file_needs_no_network_even_online(tmp_path: Path) -> None:
    cached = cached_model_path(tmp_path, REPO, FILE)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"GGUF")

    # Port 9 on loopback: nothing listens; any attempt to connect would fail the call.
    assert await resolve(tmp_path, {"HF_ENDPOINT": "http://127.0.0.1:9"}) == cached


async def test_offline_uses_the_cache_and_never_the_network(hub: Hub, tmp_path: Path) -> None:
    offline = {"HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "1"}

    with pytest.raises(ConfigurationError, match="HF_HUB_OFFLINE") as raised:
        await resolve(tmp_path, offline)
    assert FILE in str(raised.value) and REPO in str(raised.value)
    assert hub.requests == []

    await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint})
    assert await resolve(tmp_path, {**offline, "HF_HUB_OFFLINE": "true"}) == cached_model_path(tmp_path, REPO, FILE)
    assert len(hub.requests) == 1


async def test_a_missing_file_is_a_configuration_error_naming_it(hub: Hub, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as raised:
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="nothing-here.gguf")

    assert "nothing-here.gguf" in str(raised.value) and REPO in str(raised.value) and "404" in str(raised.value)
    assert leftovers(tmp_path) == []


async def test_access_and_server_errors(hub: Hub, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="gated or private"):
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="gated.gguf")
    with pytest.raises(ProviderError) as raised:
        await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="boom.gguf")
    assert raised.value.status == 503 and raised.value.retryable
    assert leftovers(tmp_path) == []


async def test_redirects_are_followed(hub: Hub, tmp_path: Path) -> None:
    path = await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint}, file="moved.gguf")

    assert path.name == "moved.gguf" and path.read_bytes() == CONTENT
    assert hub.requests == [f"/{REPO}/resolve/main/moved.gguf", f"/cdn/{FILE}"]


async def test_a_dropped_connection_leaves_no_file_in_the_cache(hub: Hub, tmp_path: Path) -> None:
    async def half_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(CONTENT))
        writer.write(CONTENT[: len(CONTENT) // 2])
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(half_then_hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ProviderError, match=FILE) as raised:
            await resolve(tmp_path, {"HF_ENDPOINT": f"http://127.0.0.1:{port}"})
    finally:
        server.close()
        await server.wait_closed()

    assert raised.value.retryable
    assert leftovers(tmp_path) == []
    # The next attempt starts afresh and succeeds.
    assert (await resolve(tmp_path, {"HF_ENDPOINT": hub.endpoint})).read_bytes() == CONTENT


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


def test_files_in_repository_folders_keep_their_folder(tmp_path: Path) -> None:
    assert cached_model_path(tmp_path, REPO, "q4/tiny.gguf") == tmp_path / "someone--tiny-GGUF" / "q4" / "tiny.gguf"
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
