"""Provider failover through the real CLI and server: retries, switching providers, and no failover after output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import ServerProcess


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackOpenAIServer, LoopbackOpenAIServer]]:
    with LoopbackOpenAIServer() as first, LoopbackOpenAIServer() as second:
        yield first, second


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ironhive").mkdir(parents=True)
    (home / ".ironhive" / "config.yaml").write_text(
        "providers:\n  chain: [lmstudio]\n  maxRetries: 2\n  initialBackoffSeconds: 0\n"
    )
    return home


def environment(servers: tuple[LoopbackOpenAIServer, LoopbackOpenAIServer]) -> dict[str, str]:
    first, second = servers
    return {
        "OPENAI_API_KEY": "sk-first",
        "OPENAI_MODEL": "gpt-test",
        "OPENAI_ENDPOINT": first.base_url,
        "LMSTUDIO_ENABLED": "true",
        "LMSTUDIO_MODEL": "second-model",
        "LMSTUDIO_ENDPOINT": second.base_url,
    }


def jsonl(
    tmp_path: Path, home: Path, servers: tuple[LoopbackOpenAIServer, LoopbackOpenAIServer]
) -> list[dict[str, object]]:
    completed = run_ironhive("-p", "hi", "-o", "jsonl", cwd=tmp_path, home=home, env=environment(servers))
    return [json.loads(line) for line in completed.stdout.splitlines()]


def fallbacks(lines: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [
        (line["kind"], line["category"], line["providerIndex"], line["totalProviders"], line["attempt"])
        for line in lines
        if line["type"] == "fallback"
    ]


def text(lines: list[dict[str, object]]) -> str:
    return "".join(str(line["content"]) for line in lines if line["type"] == "text")


def test_rate_limited_twice_then_answered(tmp_path: Path, home: Path, servers) -> None:  # type: ignore[no-untyped-def]
    first, second = servers
    first.enqueue_rate_limit(retry_after=0).enqueue_rate_limit(retry_after=0).enqueue_text("third time lucky")
    lines = jsonl(tmp_path, home, servers)
    assert fallbacks(lines) == [("retry", "rate_limit", 0, 2, 1), ("retry", "rate_limit", 0, 2, 2)]
    assert text(lines) == "third time lucky" and lines[-1]["type"] == "done"
    assert len(second.requests) == 0


def test_server_errors_hand_over_to_the_second_provider(tmp_path: Path, home: Path, servers) -> None:  # type: ignore[no-untyped-def]
    first, second = servers
    for _ in range(3):
        first.enqueue_server_error()
    second.enqueue_text("from the second provider")
    lines = jsonl(tmp_path, home, servers)
    assert fallbacks(lines) == [
        ("retry", "server", 0, 2, 1),
        ("retry", "server", 0, 2, 2),
        ("fallback", "server", 0, 2, 0),
    ]
    assert text(lines) == "from the second provider"
    assert second.requests[0]["model"] == "second-model"


def test_auth_errors_skip_the_retries(tmp_path: Path, home: Path, servers) -> None:  # type: ignore[no-untyped-def]
    first, second = servers
    first.enqueue_auth_error()
    second.enqueue_text("ok")
    lines = jsonl(tmp_path, home, servers)
    assert fallbacks(lines) == [("fallback", "auth", 0, 2, 0)]
    assert len(first.requests) == 1


def test_a_stream_cut_after_output_ends_the_turn_with_an_error(tmp_path: Path, home: Path, servers) -> None:  # type: ignore[no-untyped-def]
    first, second = servers
    first.enqueue_stream_error("connection reset", before=["Hello ", "wor"])
    second.enqueue_text("never sent")
    lines = jsonl(tmp_path, home, servers)
    assert text(lines) == "Hello wor"  # nothing duplicated
    assert lines[-1]["type"] == "error" and "connection reset" in str(lines[-1]["error"])
    assert fallbacks(lines) == []
    assert len(second.requests) == 0


def test_failover_on_the_wire(tmp_path: Path, home: Path, servers) -> None:  # type: ignore[no-untyped-def]
    first, second = servers
    for _ in range(3):
        first.enqueue_server_error()
    second.enqueue_text("from the second provider")
    with ServerProcess(cwd=tmp_path, home=home, env=environment(servers)) as server:
        server.user_message("hi")
        events = server.read_turn()
    kinds = [event["type"] for event in events]
    assert kinds.count("fallback") == 3 and kinds[-1] == "turn_end"
    handover = [event for event in events if event["type"] == "fallback"][-1]
    assert handover["kind"] == "fallback" and handover["provider_index"] == 0 and handover["total_providers"] == 2
    assert "".join(event["content"] for event in events if event["type"] == "text_delta") == "from the second provider"
