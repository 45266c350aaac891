"""The real ``ironhive`` process on the OpenAI Responses API (``openai.api: responses``) against the loopback server:
a tool round with encrypted reasoning carried to the next request and the next turn, on the CLI and on the wire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import ServerProcess, openai_environment

MODEL = "gpt-5-mini"


def reasoning_item(number: int, summary: str) -> dict[str, Any]:
    """The reasoning item the loopback server made for its ``number``-th request, as a request sends it back."""
    return {
        "type": "reasoning",
        "id": f"rs_loopback{number:06d}",
        "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": f"gAAAAB-loopback-encrypted-{number:06d}",
    }


def configure(home: Path) -> None:
    (home / ".ironhive").mkdir(parents=True, exist_ok=True)
    (home / ".ironhive" / "config.yaml").write_text(yaml.safe_dump({"openai": {"api": "responses"}}))


def script(server: LoopbackOpenAIServer) -> None:
    server.enqueue_tool_calls([("call_abc", "read_file", {"path": "README.md"})], reasoning="Read it first.")
    server.enqueue_text("A demo project.", chunks=["A demo ", "project."], reasoning="It says demo.", usage=(90, 8))
    server.enqueue_text("Still a demo.", reasoning="Same file.")


def assert_carried(requests: list[dict[str, Any]]) -> None:
    first, second, third = requests
    assert all(r["store"] is False and r["include"] == ["reasoning.encrypted_content"] for r in requests)
    assert first["model"] == MODEL and first["stream"] is True
    assert {tool["name"] for tool in first["tools"]} >= {"read_file", "write_file"}
    round_trip = [item for item in second["input"] if item.get("type") != "message"]
    assert round_trip == [
        reasoning_item(1, "Read it first."),
        {"type": "function_call", "call_id": "call_abc", "name": "read_file", "arguments": '{"path": "README.md"}'},
        {"type": "function_call_output", "call_id": "call_abc", "output": "# Demo\nA demo project.\n"},
    ]
    carried = [item for item in third["input"] if item.get("type") == "reasoning"]
    assert carried == [reasoning_item(1, "Read it first."), reasoning_item(2, "It says demo.")]
    assert third["input"][-1] == {"type": "message", "role": "user", "content": "And now?"}


def test_cli_jsonl_tool_round_and_a_continued_session_send_the_reasoning_back(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "README.md").write_text("# Demo\nA demo project.\n")
    configure(home)
    with LoopbackOpenAIServer() as server:
        script(server)
        env = openai_environment(server.base_url, MODEL)
        first = run_ironhive("-p", "What is this?", "-o", "jsonl", cwd=work, home=home, env=env)
        second = run_ironhive("-c", "-p", "And now?", "-o", "jsonl", cwd=work, home=home, env=env)
        requests = server.requests
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert {"type": "tool_call", "id": "call_abc", "name": "read_file", "arguments": '{"path": "README.md"}'} in lines
    assert "".join(line["content"] for line in lines if line["type"] == "text").endswith("A demo project.")
    assert_carried(requests)


def test_wire_tool_round_and_a_second_turn_send_the_reasoning_back(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "README.md").write_text("# Demo\nA demo project.\n")
    configure(home)
    with LoopbackOpenAIServer() as model:
        script(model)
        with ServerProcess(cwd=work, home=home, env=openai_environment(model.base_url, MODEL)) as server:
            assert server.next_event()["type"] == "session_started"
            server.user_message("What is this?")
            turn = server.read_turn()
            server.user_message("And now?")
            later = server.read_turn()
        requests = model.requests
    ends = [event for event in turn if event["type"] == "tool_end"]
    assert ends and ends[0]["call_id"] == "call_abc" and ends[0]["success"] is True
    thinking = "".join(str(event.get("content", "")) for event in turn if event["type"] == "thinking_delta")
    assert "Read it first." in thinking and "It says demo." in thinking
    assert any(event["type"] == "turn_end" for event in later)
    assert_carried(requests)
