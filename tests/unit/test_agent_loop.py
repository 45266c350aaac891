"""The agent loop over ScriptedChatClient: turns, tool rounds, caps, usage, history, streaming and cancellation."""

from __future__ import annotations

import asyncio

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ProviderError, ToolError
from ironhive.domain.options import ChatBehavior
from ironhive.domain.turn import (
    AddendumChunk,
    TextDelta,
    ThinkingDelta,
    ToolCallChunk,
    ToolResultChunk,
    TurnCompleted,
    TurnRecord,
    UsageChunk,
)
from ironhive.ports.chat import ChatOptions, Role, Usage
from tests.support.fakes import FakeClock, RecordingTool


def make_loop(client: ScriptedChatClient, **kwargs: object) -> AgentLoop:
    return AgentLoop(client, clock=FakeClock(step=0.001), **kwargs)  # type: ignore[arg-type]


def call(name: str = "echo", **arguments: object) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, arguments=arguments)  # type: ignore[arg-type]


async def test_text_turn_returns_content_and_usage() -> None:
    client = ScriptedChatClient([ScriptStep(text="Hello there", usage=Usage(input_tokens=5, output_tokens=2))])
    turn = await make_loop(client).run("Hi")
    assert turn.content == "Hello there"
    assert turn.usage == Usage(input_tokens=5, output_tokens=2)
    assert turn.usage.total_tokens == 7
    assert turn.finish_reason == "stop"
    assert client.requests[0].streaming is False


async def test_system_prompt_leads_every_request_and_history_is_kept_across_turns() -> None:
    client = ScriptedChatClient([ScriptStep(text="one"), ScriptStep(text="two")])
    loop = make_loop(client, system_prompt="Be brief.")
    await loop.run("first")
    await loop.run("second")
    roles = [(message.role, message.text) for message in client.requests[1].messages]
    assert roles == [
        (Role.SYSTEM, "Be brief."),
        (Role.USER, "first"),
        (Role.ASSISTANT, "one"),
        (Role.USER, "second"),
    ]
    assert [message.text for message in loop.history] == ["first", "one", "second", "two"]


async def test_tool_round_runs_inside_the_turn_and_sums_usage_over_round_trips() -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient(
        [
            ScriptStep(tool_calls=(call(value="x"),), usage=Usage(input_tokens=10, output_tokens=3)),
            ScriptStep(text="done", usage=Usage(input_tokens=20, output_tokens=4)),
        ]
    )
    turn = await make_loop(client, tools=[tool]).run("use the tool")
    assert tool.calls == [{"value": "x"}]
    assert turn.content == "done"
    assert turn.usage == Usage(input_tokens=30, output_tokens=7)
    [record] = turn.tool_calls
    assert (record.name, record.success, record.result) == ("echo", True, "echo: {'value': 'x'}")
    second_request = client.requests[1].messages
    assert second_request[-1].role is Role.TOOL
    assert second_request[-1].tool_results[0].result == "echo: {'value': 'x'}"
    assert [m.role for m in turn.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]


async def test_streaming_yields_chunks_in_order_and_ends_with_the_turn() -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient(
        [
            ScriptStep(thinking="hmm", text="Let me look", tool_calls=(call(),), usage=Usage(input_tokens=1)),
            ScriptStep(text="Found it.", usage=Usage(output_tokens=2)),
        ]
    )
    chunks = [chunk async for chunk in make_loop(client, tools=[tool]).run_streaming("go")]
    kinds = [type(chunk).__name__ for chunk in chunks]
    assert kinds == [
        "ThinkingDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "ToolCallChunk",
        "UsageChunk",
        "ToolResultChunk",
        "TextDelta",
        "TextDelta",
        "UsageChunk",
        "TurnCompleted",
    ]
    assert isinstance(chunks[0], ThinkingDelta) and chunks[0].text == "hmm"
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Let me lookFound it."
    turn = chunks[-1]
    assert isinstance(turn, TurnCompleted)
    assert turn.turn.content == "Let me look\n\nFound it."
    assert turn.turn.thinking == "hmm"
    assert turn.turn.usage == Usage(input_tokens=1, output_tokens=2)
    assert isinstance(chunks[4], ToolCallChunk) and isinstance(chunks[6], ToolResultChunk)
    assert chunks[6].record.call_id == chunks[4].call.call_id
    assert all(request.streaming for request in client.requests)


async def test_tool_failure_reaches_the_model_as_a_failed_result() -> None:
    tool = RecordingTool("echo", fail_with=ToolError("disk full"))
    client = ScriptedChatClient([ScriptStep(tool_calls=(call(),)), ScriptStep(text="sorry")])
    turn = await make_loop(client, tools=[tool]).run("go")
    assert turn.tool_calls[0].success is False
    assert turn.tool_calls[0].result == "disk full"
    assert client.requests[1].messages[-1].tool_results[0].success is False


async def test_unknown_tool_is_a_failed_result_not_a_crash() -> None:
    client = ScriptedChatClient([ScriptStep(tool_calls=(call("nope"),)), ScriptStep(text="ok")])
    turn = await make_loop(client, tools=[RecordingTool("echo")]).run("go")
    assert turn.tool_calls[0].result == "Tool 'nope' is not available."
    assert turn.tool_calls[0].success is False


async def test_iteration_cap_forces_a_final_answer_without_tools() -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient([ScriptStep(tool_calls=(call(n=i),)) for i in range(2)] + [ScriptStep(text="summary")])
    loop = make_loop(client, tools=[tool], behavior=ChatBehavior(maximum_iterations_per_request=2))
    turn = await loop.run("go")
    assert len(tool.calls) == 2
    assert turn.content == "summary"
    final = client.requests[-1].options
    assert (final.tools, final.tool_mode) == ((), "none")
    assert client.requests[0].options.tools == (tool.spec,)


async def test_consecutive_failing_rounds_stop_the_turn_and_leave_history_unchanged() -> None:
    tool = RecordingTool("echo", fail_with=ToolError("boom"))
    steps = [ScriptStep(tool_calls=(call(n=i),)) for i in range(10)]
    client = ScriptedChatClient(steps)
    loop = make_loop(client, tools=[tool], behavior=ChatBehavior(maximum_consecutive_errors_per_request=2))
    with pytest.raises(ToolError, match="tools failed in 3 rounds in a row"):
        await loop.run("go")
    assert len(tool.calls) == 3
    assert loop.history == ()


async def test_provider_error_leaves_history_unchanged() -> None:
    client = ScriptedChatClient([ScriptStep(text="first"), ScriptStep(error=ProviderError("down", status=503))])
    loop = make_loop(client)
    await loop.run("one")
    with pytest.raises(ProviderError, match="down"):
        await loop.run("two")
    assert [m.text for m in loop.history] == ["one", "first"]


async def test_cancelled_turn_leaves_history_unchanged() -> None:
    client = ScriptedChatClient([ScriptStep(text="a b c d e f g h", delay_seconds=0.05)])
    loop = make_loop(client)

    async def consume() -> None:
        async for _ in loop.run_streaming("go"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.12)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert loop.history == ()


async def test_turn_options_apply_to_that_turn_only() -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient([ScriptStep(text="a"), ScriptStep(text="b")])
    loop = make_loop(client, tools=[tool], options=ChatOptions(temperature=0.7))
    await loop.run("one", ChatOptions(temperature=0.1, tools=()))
    await loop.run("two")
    first, second = (request.options for request in client.requests)
    assert (first.temperature, first.tools) == (0.1, ())
    assert (second.temperature, second.tools) == (0.7, (tool.spec,))


async def test_a_tool_not_offered_this_turn_is_not_run() -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient([ScriptStep(tool_calls=(call(),)), ScriptStep(text="ok")])
    turn = await make_loop(client, tools=[tool]).run("go", ChatOptions(tools=()))
    assert tool.calls == []
    assert turn.tool_calls[0].success is False


async def test_required_tool_mode_becomes_auto_after_the_required_call() -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient([ScriptStep(tool_calls=(call(),)), ScriptStep(text="ok")])
    await make_loop(client, tools=[tool]).run("go", ChatOptions(tool_mode="require:echo"))
    assert [r.options.tool_mode for r in client.requests] == ["require:echo", "auto"]


async def test_observer_note_becomes_the_addendum_and_never_enters_history() -> None:
    class Observer:
        def observe(self, turn: TurnRecord) -> str | None:
            return f"{len(turn.tool_calls)} tool calls"

    client = ScriptedChatClient([ScriptStep(text="answer")])
    loop = make_loop(client, observers=[Observer()])
    chunks = [chunk async for chunk in loop.run_streaming("go")]
    assert isinstance(chunks[-2], AddendumChunk) and chunks[-2].text == "0 tool calls"
    assert isinstance(chunks[-1], TurnCompleted) and chunks[-1].turn.addendum == "0 tool calls"
    assert all("tool calls" not in message.text for message in loop.history)


async def test_usage_chunk_only_when_reported() -> None:
    client = ScriptedChatClient([ScriptStep(text="x")])
    chunks = [chunk async for chunk in make_loop(client).run_streaming("go")]
    assert not any(isinstance(chunk, UsageChunk) for chunk in chunks)
    assert isinstance(chunks[-1], TurnCompleted) and chunks[-1].turn.usage.total_tokens is None


@pytest.mark.parametrize("prompt", ["", "   "])
async def test_blank_prompt_is_an_argument_error(prompt: str) -> None:
    with pytest.raises(ValueError, match="prompt"):
        await make_loop(ScriptedChatClient()).run(prompt)
