"""The real CLI on each vendor's wire format: Anthropic Messages and Gemini, selected by config and by alias."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.anthropic_server import LoopbackAnthropicServer
from tests.support.cli import run_ironhive
from tests.support.gemini_server import LoopbackGeminiServer


def configure(home: Path, text: str) -> None:
    (home / ".ironhive").mkdir(parents=True, exist_ok=True)
    (home / ".ironhive" / "config.yaml").write_text(text)


def test_anthropic_tool_round_through_the_cli(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    with LoopbackAnthropicServer() as server:
        configure(
            tmp_path / "home",
            f"anthropic:\n  apiKey: sk-ant-test\n  model: claude-sonnet-4-5\n  endpoint: {server.base_url}\n",
        )
        server.enqueue_tool_use([("toolu_1", "read_file", {"path": "notes.txt"})], usage=(40, 8))
        server.enqueue_text("You must remember the milk.", chunks=["You must ", "remember the milk."], usage=(60, 6))
        completed = run_ironhive(
            "--provider", "claude", "-p", "What is in notes.txt?", "-o", "json", cwd=work, home=tmp_path / "home"
        )
        requests = server.requests
    assert completed.returncode == 0, completed.stderr
    body = json.loads(completed.stdout)
    assert body["content"] == "You must remember the milk."
    # The loopback server reports zero cache reads, and Anthropic reports no reasoning count.
    assert body["usage"] == {"inputTokens": 100, "outputTokens": 14, "totalTokens": 114, "cachedInputTokens": 0}
    assert body["toolCalls"][0]["result"] == "remember the milk\n"
    tool_result = requests[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_1"


def test_gemini_answer_through_the_cli(tmp_path: Path) -> None:
    with LoopbackGeminiServer() as server:
        configure(
            tmp_path / "home",
            f"googleai:\n  apiKey: gemini-test-key\n  model: gemini-2.5-flash\n  endpoint: {server.base_url}\n",
        )
        server.enqueue_text("Hello from Gemini.", chunks=["Hello ", "from Gemini."], usage=(12, 4))
        completed = run_ironhive(
            "-m", "gemini/gemini-2.5-flash", "-p", "hi", "-o", "jsonl", cwd=tmp_path, home=tmp_path / "home"
        )
        requests = server.requests
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    assert "".join(line["content"] for line in lines if line["type"] == "text") == "Hello from Gemini."
    assert requests[0].streaming and requests[0].model == "gemini-2.5-flash"
    assert "gemini-test-key" not in completed.stdout + completed.stderr
