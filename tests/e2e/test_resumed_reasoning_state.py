"""Providers' opaque reasoning state through the real process: stored with the session, sent back on resume only to
the provider that issued it, and kept out of the CLI's and the wire's output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.anthropic_server import SIGNATURE, LoopbackAnthropicServer
from tests.support.cli import run_ironhive
from tests.support.gemini_server import DEFAULT_SIGNATURE, LoopbackGeminiServer
from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import Event, ServerProcess

THINK_HARD = {"reasoning_effort": "high"}


def configure(home: Path, text: str) -> None:
    (home / ".ironhive").mkdir(parents=True, exist_ok=True)
    (home / ".ironhive" / "config.yaml").write_text(text)


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    return work


def anthropic_config(server: LoopbackAnthropicServer) -> str:
    return f"anthropic:\n  apiKey: sk-ant-test\n  model: claude-sonnet-4-5\n  endpoint: {server.base_url}\n"


def one_turn(work: Path, home: Path, session: str, content: str, *args: str) -> list[Event]:
    with ServerProcess("--provider", "anthropic", "--session-id", session, *args, cwd=work, home=home) as server:
        server.user_message(content, options=THINK_HARD)
        events = server.read_turn()
        assert SIGNATURE not in "\n".join(server.stdout_lines)  # the wire never shows the state
    assert events[-1]["type"] == "turn_end", events
    return events


def assistant_turns(request: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [message["content"] for message in request["messages"] if message["role"] == "assistant"]


def test_a_resumed_anthropic_session_sends_the_stored_signed_thinking(tmp_path: Path) -> None:
    work, home = workspace(tmp_path), tmp_path / "home"
    with LoopbackAnthropicServer() as anthropic:
        configure(home, anthropic_config(anthropic))
        anthropic.enqueue_tool_use([("toolu_1", "read_file", {"path": "notes.txt"})], thinking=["I should ", "read."])
        anthropic.enqueue_text("It says milk.", thinking="Found it.")
        one_turn(work, home, "kept-thinking", "What is in notes.txt?")
        anthropic.enqueue_text("Still milk.")
        # A new process: nothing of the first one's memory is left, only the stored session.
        one_turn(work, home, "kept-thinking", "And now?")
        requests = anthropic.requests

    resumed = requests[-1]
    assert resumed["thinking"]["type"] == "enabled"
    calls_turn, answer_turn = assistant_turns(resumed)
    assert calls_turn[0] == {"type": "thinking", "thinking": "I should read.", "signature": SIGNATURE}
    assert calls_turn[1]["type"] == "tool_use" and calls_turn[1]["id"] == "toolu_1"
    assert answer_turn == [
        {"type": "thinking", "thinking": "Found it.", "signature": SIGNATURE},
        {"type": "text", "text": "It says milk."},
    ]


def test_a_continued_gemini_session_sends_the_stored_thought_signature(tmp_path: Path) -> None:
    work, home = workspace(tmp_path), tmp_path / "home"
    with LoopbackGeminiServer() as gemini:
        configure(
            home,
            f"googleai:\n  apiKey: gemini-test-key\n  model: gemini-3-pro-preview\n  endpoint: {gemini.base_url}\n",
        )
        gemini.enqueue_function_calls([("read_file", {"path": "notes.txt"})]).enqueue_text("It says milk.")
        first = run_ironhive("--provider", "gemini", "-p", "What is in notes.txt?", "-o", "json", cwd=work, home=home)
        gemini.enqueue_text("Still milk.")
        second = run_ironhive("--provider", "gemini", "-c", "-p", "And now?", "-o", "jsonl", cwd=work, home=home)
        requests = gemini.requests

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert DEFAULT_SIGNATURE not in first.stdout + second.stdout  # the CLI's output never shows the state
    contents = requests[-1].body["contents"]
    model_parts = [part for content in contents if content["role"] == "model" for part in content["parts"]]
    (call,) = [part for part in model_parts if "functionCall" in part]
    assert call["functionCall"]["name"] == "read_file"
    assert call["thoughtSignature"] == DEFAULT_SIGNATURE  # the real one, not the documented dummy


def test_failover_from_anthropic_to_openai_drops_anthropics_signatures(tmp_path: Path) -> None:
    work, home = workspace(tmp_path), tmp_path / "home"
    with LoopbackAnthropicServer() as anthropic, LoopbackOpenAIServer() as openai:
        configure(
            home,
            anthropic_config(anthropic)
            + f"openai:\n  apiKey: sk-test\n  model: gpt-test\n  endpoint: {openai.base_url}\n"
            + "providers:\n  chain: [openai]\n  maxRetries: 0\n  initialBackoffSeconds: 0\n",
        )
        anthropic.enqueue_tool_use([("toolu_1", "read_file", {"path": "notes.txt"})], thinking="I should read.")
        anthropic.enqueue_text("It says milk.", thinking="Found it.")
        one_turn(work, home, "handed-over", "What is in notes.txt?")
        anthropic.enqueue_auth_error()
        openai.enqueue_text("Still milk, says the second provider.")
        events = one_turn(work, home, "handed-over", "And now?")
        openai_requests = openai.requests

    assert any(event["type"] == "fallback" and event["kind"] == "fallback" for event in events)
    (handed,) = openai_requests
    sent = json.dumps(handed)
    assert "toolu_1" in sent  # the conversation went over
    assert SIGNATURE not in sent and "signature" not in sent  # the state of Anthropic's thinking did not
