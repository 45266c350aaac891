"""The real ``ironhive -p`` process against a loopback server speaking OpenAI chat completions (streaming)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.cli import run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer


def openai_env(server: LoopbackOpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": "gpt-test", "OPENAI_ENDPOINT": server.base_url}


def test_streamed_answer_with_a_tool_round(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# Demo\nA demo project.\n")
    with LoopbackOpenAIServer() as server:
        server.enqueue_tool_calls([("call_abc", "read_file", {"path": "README.md"})], text="Reading.", usage=(50, 9))
        server.enqueue_text("It is a demo project.", chunks=["It is ", "a demo ", "project."], usage=(80, 7))
        completed = run_ironhive(
            "-p", "What is this project?", "-o", "jsonl", cwd=work, home=tmp_path, env=openai_env(server)
        )
        requests = server.requests
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    assert lines[0]["type"] == "start" and re.fullmatch(r"[0-9a-f]+-[0-9a-f]{8}", lines[0]["sessionId"])
    assert lines[-1] == {"type": "done", "sessionId": lines[0]["sessionId"]}
    assert {"type": "tool_call", "id": "call_abc", "name": "read_file", "arguments": '{"path": "README.md"}'} in lines
    result = next(line for line in lines if line["type"] == "tool_result")
    assert result == {
        "type": "tool_result",
        "id": "call_abc",
        "name": "read_file",
        "success": True,
        "result": "# Demo\nA demo project.\n",
    }
    texts = [line["content"] for line in lines if line["type"] == "text"]
    assert "".join(texts).endswith("It is a demo project.")
    assert len(texts) >= 4  # streamed, not one piece
    first, second = requests
    assert first["stream"] is True and first["model"] == "gpt-test"
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][-1] == {"role": "user", "content": "What is this project?"}
    assert {tool["function"]["name"] for tool in first["tools"]} >= {"read_file", "write_file", "execute_command"}
    tool_message = second["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_abc", "content": "# Demo\nA demo project.\n"}


def test_json_output_sums_usage_over_round_trips(tmp_path: Path) -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_tool_calls([("call_1", "list_directory", {"path": "."})], usage=(40, 5))
        server.enqueue_text("Empty.", usage=(60, 2))
        completed = run_ironhive("-p", "List", "-o", "json", cwd=tmp_path, home=tmp_path, env=openai_env(server))
    assert completed.returncode == 0, completed.stderr
    body = json.loads(completed.stdout)
    # The loopback server reports zero cached and reasoning tokens: reported, so shown (a part of each total).
    assert body["usage"] == {
        "inputTokens": 100,
        "outputTokens": 7,
        "totalTokens": 107,
        "cachedInputTokens": 0,
        "reasoningTokens": 0,
    }
    assert body["content"] == "Empty."
    assert body["toolCalls"][0]["name"] == "list_directory" and body["toolCalls"][0]["success"] is True


def test_provider_auth_error_is_a_clean_error_without_the_key(tmp_path: Path) -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_auth_error()
        completed = run_ironhive("-p", "hi", "-o", "json", cwd=tmp_path, home=tmp_path, env=openai_env(server))
    assert completed.returncode == 1
    body = json.loads(completed.stdout)
    assert body["code"] == 1 and "401" in body["error"]
    assert "sk-loopback-test" not in completed.stdout + completed.stderr
