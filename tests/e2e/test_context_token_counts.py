"""Real token counts end to end: the real ``ironhive`` compacts at the request whose tokens, not its characters ÷ 4,
cross the trigger — counted by tiktoken for an OpenAI model, and corrected by the reported usage for a model whose
tokenizer ironhive does not have."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ironhive.adapters.tokens.tiktoken_counter import TiktokenCounter
from ironhive.domain.context.tokens import CALL_OVERHEAD, DEFAULT_COUNTER, LIST_OVERHEAD, MESSAGE_OVERHEAD, TokenCounter
from tests.e2e.test_startup_imports import modules_at_exit, modules_imported_by
from tests.support.anthropic_server import LoopbackAnthropicServer, MessageReply, TokenUsage
from tests.support.cli import run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer, ScriptedCall, TextReply, ToolCallsReply

WINDOW = 6000
TRIGGER = 4500
"""The token trigger for a 6000-token window: compact once a request (its messages and the ~1,700 tokens of tool
definitions sent with them) is over window − protected tail / 2."""
FILES = 7
CJK = "上下文窗口以令牌计算而不是字符压缩必须在正确的时刻发生否则请求会太大"
"""CJK text: o200k_base counts it at about 0.75 tokens a character, chars ÷ 4 at 0.25."""


def count_wire_message(message: dict[str, Any], counter: TokenCounter) -> int:
    """The domain's count of one message (4 + texts, 10 + name + arguments per call), from its wire form."""
    tokens = MESSAGE_OVERHEAD + counter.count(message.get("content") or "")
    for call in message.get("tool_calls") or ():
        tokens += CALL_OVERHEAD + counter.count(call["function"]["name"]) + counter.count(call["function"]["arguments"])
    return tokens


def count_wire(messages: list[dict[str, Any]], counter: TokenCounter) -> int:
    return LIST_OVERHEAD + sum(count_wire_message(message, counter) for message in messages)


def count_wire_tools(body: dict[str, Any], counter: TokenCounter) -> int:
    """The tool definitions of an OpenAI chat request: 10 + name + description + compact JSON schema each."""
    return sum(
        CALL_OVERHEAD
        + counter.count(tool["function"]["name"])
        + counter.count(tool["function"].get("description", ""))
        + counter.count(json.dumps(tool["function"]["parameters"], separators=(",", ":"), ensure_ascii=False))
        for tool in body.get("tools") or ()
    )


def count_request(body: dict[str, Any], counter: TokenCounter) -> int:
    """What a request takes of the window: its messages and its tool definitions."""
    return count_wire(body["messages"], counter) + count_wire_tools(body, counter)


def is_summary_request(body: dict[str, Any]) -> bool:
    return str(body["messages"][-1]["content"]).startswith("Summarise in under")


def reader(usage: Callable[[dict[str, Any]], tuple[int, int] | None]) -> Callable[[dict[str, Any]], Any]:
    """Answers the agent with one read_file call per request (part0.txt, part1.txt, ...), then a text; summaries too."""
    issued: list[str] = []

    def reply(body: dict[str, Any]) -> TextReply | ToolCallsReply:
        if is_summary_request(body):
            return TextReply(text="Summary: the first parts were read.")
        if len(issued) == FILES:
            return TextReply(text="Read them all.", usage=usage(body))
        issued.append(f"part{len(issued)}.txt")
        call = ScriptedCall(call_id=f"call_{len(issued)}", name="read_file", arguments={"path": issued[-1]})
        return ToolCallsReply(calls=[call], usage=usage(body))

    return reply


def run_reads(tmp_path: Path, env: dict[str, str], *args: str, config_text: str = "") -> list[dict[str, Any]]:
    """Run a one-shot that reads every part, return its jsonl lines (the requests stay on the server)."""
    work = tmp_path / "work"
    work.mkdir()
    for index in range(FILES):
        (work / f"part{index}.txt").write_text(f"Part {index}.\n" + CJK * 32 + "\n", encoding="utf-8")
    config = tmp_path / ".ironhive" / "config.yaml"
    config.parent.mkdir()
    # No observation masking: each request is the one before plus a round, until one is compacted.
    config.write_text(
        f"compaction:\n  maxContextTokens: {WINDOW}\n  enableObservationMasking: false\n"
        f"  goalReminder:\n    enabled: false\n{config_text}"
    )
    completed = run_ironhive(
        *args, "-p", "Read part0.txt to part6.txt one by one.", "-o", "jsonl", cwd=work, home=tmp_path, env=env
    )
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in completed.stdout.splitlines()]


def agent_requests(server: LoopbackOpenAIServer) -> list[dict[str, Any]]:
    return [body for body in server.requests if not is_summary_request(body)]


def first_compacted(requests: list[dict[str, Any]]) -> int:
    """The first request that does not carry the whole conversation (each round adds a call and its result)."""
    for index in range(1, len(requests)):
        if requests[index]["messages"][:-2] != requests[index - 1]["messages"]:
            return index
    raise AssertionError("no request was compacted")


def newest_round(body: dict[str, Any], counter: TokenCounter) -> int:
    """The call and result a request adds to the one before it."""
    return sum(count_wire_message(message, counter) for message in body["messages"][-2:])


def test_an_openai_model_is_compacted_at_the_request_its_tiktoken_count_crosses_the_trigger(tmp_path: Path) -> None:
    tiktoken = TiktokenCounter("o200k_base")
    with LoopbackOpenAIServer(models=("gpt-4o-mini",)) as server:
        reply = reader(lambda body: None)  # no usage: the tokenizer alone decides
        for _ in range(3 * FILES):  # the reads, the answer and the summaries
            server.enqueue_function(reply)
        env = {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": "gpt-4o-mini", "OPENAI_ENDPOINT": server.base_url}
        lines = run_reads(tmp_path, env)
        requests = agent_requests(server)
    assert lines[-1]["type"] == "done"
    assert len(requests) == FILES + 1
    assert any(line["type"] == "context_compacted" for line in lines)
    compacted = first_compacted(requests)
    before = count_request(requests[compacted - 1], tiktoken)
    uncompacted = before + newest_round(requests[compacted], tiktoken)
    assert before <= TRIGGER < uncompacted  # compacted exactly when the real count crossed the trigger
    # Without the tool definitions the same request is below the trigger: they take their share of the window.
    assert uncompacted - count_wire_tools(requests[compacted], tiktoken) <= TRIGGER - 1000
    # By characters ÷ 4 the same request is far below the trigger: the old estimate would have sent it whole.
    estimate = count_request(requests[compacted - 1], DEFAULT_COUNTER) + newest_round(
        requests[compacted], DEFAULT_COUNTER
    )
    assert estimate < 0.8 * TRIGGER
    assert all(count_request(body, tiktoken) <= WINDOW for body in requests)


@pytest.mark.parametrize("reported", [True, False])
def test_reported_usage_corrects_a_model_without_a_tokenizer(tmp_path: Path, reported: bool) -> None:
    """A model tiktoken does not know is estimated by characters ÷ 4; the prompt tokens its server reports (here: the
    real count) correct the estimate from the next request on, so the conversation is compacted before it outgrows
    the window. Without reports nothing corrects the estimate and nothing is compacted."""
    real = TiktokenCounter("o200k_base")  # what this model's (loopback) server counts

    def usage(body: dict[str, Any]) -> tuple[int, int] | None:
        return (count_request(body, real), 5) if reported else None

    with LoopbackOpenAIServer(models=("qwen-test",)) as server:
        reply = reader(usage)
        for _ in range(3 * FILES):
            server.enqueue_function(reply)
        env = {"LMSTUDIO_ENABLED": "true", "LMSTUDIO_ENDPOINT": server.base_url, "LMSTUDIO_MODEL": "qwen-test"}
        lines = run_reads(tmp_path, env, "--provider", "lmstudio")
        requests = agent_requests(server)
    assert lines[-1]["type"] == "done"
    compactions = [line for line in lines if line["type"] == "context_compacted"]
    if not reported:
        assert compactions == []  # chars ÷ 4 never sees the window fill
        return
    assert compactions
    compacted = first_compacted(requests)
    before = count_request(requests[compacted - 1], real)
    uncompacted = before + newest_round(requests[compacted], real)
    # The correction learned from the previous response (2.4 here, the English system prompt diluting it) puts the
    # request over the trigger at the same request as the real count does.
    assert before <= TRIGGER < uncompacted
    assert all(count_request(body, real) <= WINDOW for body in requests)


def anthropic_text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(str(block.get("text") or block.get("content") or "") for block in content)


def test_anthropic_counts_with_its_count_endpoint_near_the_trigger_only(tmp_path: Path) -> None:
    """A Claude model is estimated by characters ÷ 4; near the trigger the count endpoint (here: the real count of
    the loopback's tokenizer) decides, a few times in the whole run, and compaction starts at the right request."""
    real = TiktokenCounter("o200k_base")

    def count(body: dict[str, Any]) -> int:
        system = "".join(block["text"] for block in body.get("system") or ())
        return real.count(system) + sum(real.count(anthropic_text(message)) for message in body["messages"])

    issued: list[str] = []

    def with_tools(body: dict[str, Any]) -> int:
        """What a request costs: its messages, and its tool definitions as the count endpoint was not asked for."""
        return count(body) + sum(
            CALL_OVERHEAD
            + real.count(tool["name"])
            + real.count(tool.get("description", ""))
            + real.count(json.dumps(tool["input_schema"], separators=(",", ":"), ensure_ascii=False))
            for tool in body.get("tools") or ()
        )

    def reply(body: dict[str, Any]) -> MessageReply:
        usage = TokenUsage(input_tokens=with_tools(body), output_tokens=5)
        if anthropic_text(body["messages"][-1]).startswith("Summarise in under"):
            return MessageReply(text="Summary: the first parts were read.", usage=usage)
        if len(issued) == FILES:
            return MessageReply(text="Read them all.", usage=usage)
        issued.append(f"part{len(issued)}.txt")
        call = ScriptedCall(call_id=f"toolu_{len(issued)}", name="read_file", arguments={"path": issued[-1]})
        return MessageReply(calls=(call,), usage=usage)

    with LoopbackAnthropicServer(models=("claude-test",)) as server:
        server.count_tokens = count
        for _ in range(3 * FILES):
            server.enqueue_function(reply)
        env = {"ANTHROPIC_API_KEY": "sk-ant-loopback", "ANTHROPIC_MODEL": "claude-test"}
        endpoint = f"anthropic:\n  endpoint: {server.base_url}/v1\n"
        lines = run_reads(tmp_path, env, "--provider", "anthropic", config_text=endpoint)
        bodies = [body for body in server.requests if not anthropic_text(body["messages"][-1]).startswith("Summarise")]
        counted = len(server.count_requests)
    assert lines[-1]["type"] == "done"
    assert len(bodies) == FILES + 1
    assert 1 <= counted <= 3  # near the trigger only: not on each of the 8 rounds
    assert any(line["type"] == "context_compacted" for line in lines)
    sizes = [len(body["messages"]) for body in bodies]
    compacted = next(index for index in range(1, len(sizes)) if sizes[index] != sizes[index - 1] + 2)
    # Anthropic turns hold a call and its result in two messages, as the agent's history does.
    newest = {"messages": bodies[compacted]["messages"][-2:]}
    assert with_tools(bodies[compacted - 1]) <= TRIGGER < with_tools(bodies[compacted - 1]) + count(newest)
    assert all(with_tools(body) <= WINDOW for body in bodies)


def test_a_run_that_needs_no_tokenizer_does_not_import_tiktoken(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"steps": [{"text": "done"}]}')
    args = ("--provider", "scripted", "-m", str(script), "-p", "hi", "-o", "json")
    modules = modules_at_exit(*args, cwd=tmp_path, home=tmp_path, env={})
    assert "ironhive.domain.context.tokens" in modules  # it counted, by characters ÷ 4
    assert not {name for name in modules if name == "tiktoken" or name.startswith(("tiktoken.", "tiktoken_ext"))}
    for flag in ("--help", "--version"):
        assert "tiktoken" not in modules_imported_by(flag)


def test_a_one_shot_on_an_openai_model_far_below_its_window_loads_no_tokenizer(tmp_path: Path) -> None:
    """gpt-4o-mini's window is 128k tokens: the cheap bounds (UTF-8 lengths) settle the compaction, budget and
    failover checks of a few-thousand-token request, and the reported usage is learned only when a count is needed,
    so tiktoken (and its half second of rank loading) is never imported."""
    with LoopbackOpenAIServer(models=("gpt-4o-mini",)) as server:
        server.enqueue_text("Hello.", usage=(2500, 1))
        env = {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": "gpt-4o-mini", "OPENAI_ENDPOINT": server.base_url}
        modules = modules_at_exit("-p", "hi", "-o", "json", cwd=tmp_path, home=tmp_path, env=env)
        (request,) = server.requests
    assert request["model"] == "gpt-4o-mini" and request["tools"]  # a real agent request, tools and all
    assert "ironhive.adapters.tokens.selection" in modules  # the OpenAI model's counter was chosen
    assert not {name for name in modules if name == "tiktoken" or name.startswith(("tiktoken.", "tiktoken_ext"))}
