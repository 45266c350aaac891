"""The tool invocation pipeline and its guards: parse failures, repeated calls, repeated errors, resilient arguments."""

from __future__ import annotations

import json

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.domain.invocation.guards import (
    ArgumentParseFailureMiddleware,
    RepeatedCallGuardMiddleware,
    RepeatedErrorGuardMiddleware,
)
from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolInvocationPipeline, ToolOutcome
from ironhive.domain.invocation.resilient import ResilientArgumentsMiddleware, resilient_function_invoker
from ironhive.domain.tool_calls import make_tool_call
from tests.support.fakes import FakeClock, RecordingTool

GUARDS = ToolInvocationPipeline(
    [
        ArgumentParseFailureMiddleware(),
        RepeatedCallGuardMiddleware(),
        RepeatedErrorGuardMiddleware(),
        ResilientArgumentsMiddleware(),
    ]
)


def loop_with(tool: RecordingTool, steps: list[ScriptStep]) -> tuple[AgentLoop, ScriptedChatClient]:
    client = ScriptedChatClient(steps)
    return AgentLoop(client, clock=FakeClock(), tools=[tool], pipeline=GUARDS), client


def same_call(times: int, **arguments: object) -> list[ScriptStep]:
    return [ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments=arguments),)) for _ in range(times)]  # type: ignore[arg-type]


async def test_unparseable_arguments_are_refused_before_the_tool_runs() -> None:
    tool = RecordingTool("echo")
    steps = [ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments='{"path": '),)), ScriptStep(text="ok")]
    loop, _ = loop_with(tool, steps)
    turn = await loop.run("go")
    assert tool.calls == []
    result = turn.tool_calls[0].result
    assert result.startswith("JSONDecodeError: ")
    assert result.endswith("Re-issue the call with complete arguments that are valid JSON matching the tool's schema.")
    assert turn.tool_calls[0].success is False


async def test_fourth_identical_successful_call_is_refused() -> None:
    tool = RecordingTool("echo")
    loop, _ = loop_with(tool, [*same_call(4, path="a"), ScriptStep(text="ok")])
    turn = await loop.run("go")
    assert len(tool.calls) == 3
    assert [c.success for c in turn.tool_calls] == [True, True, True, False]
    assert turn.tool_calls[3].result == (
        "'echo' already ran 3 times in a row with these same arguments. Its result is in the conversation; do not "
        "call it again with these arguments — use that result, or call a different tool or change the arguments."
    )


async def test_a_different_call_resets_the_repeated_call_streak() -> None:
    tool = RecordingTool("echo")
    steps = [*same_call(2, path="a"), *same_call(1, path="b"), *same_call(3, path="a"), ScriptStep(text="ok")]
    loop, _ = loop_with(tool, steps)
    turn = await loop.run("go")
    assert all(c.success for c in turn.tool_calls)


async def test_key_order_does_not_make_a_call_different() -> None:
    tool = RecordingTool("echo")
    steps = [
        ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments='{"a": 1, "b": 2}'),)),
        ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments='{"b": 2, "a": 1}'),)),
        ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments='{"a": 1, "b": 2}'),)),
        ScriptStep(tool_calls=(ScriptedToolCall(name="echo", arguments='{"b": 2, "a": 1}'),)),
        ScriptStep(text="ok"),
    ]
    loop, _ = loop_with(tool, steps)
    turn = await loop.run("go")
    assert [c.success for c in turn.tool_calls] == [True, True, True, False]


async def test_the_streak_starts_afresh_in_a_new_turn() -> None:
    tool = RecordingTool("echo")
    loop, _ = loop_with(
        tool, [*same_call(3, path="a"), ScriptStep(text="ok"), *same_call(3, path="a"), ScriptStep(text="ok")]
    )
    await loop.run("one")
    turn = await loop.run("two")
    assert all(c.success for c in turn.tool_calls)


async def test_same_error_three_times_stops_the_request() -> None:
    tool = RecordingTool("echo", fail_with=ToolError("disk full"))
    loop, client = loop_with(tool, [*same_call(5), ScriptStep(text="never")])
    turn = await loop.run("go")
    assert len(tool.calls) == 3
    assert [c.result for c in turn.tool_calls[:2]] == ["disk full", "disk full"]
    assert turn.tool_calls[2].result == (
        "'echo' failed with the same error 3 times in a row (disk full); the request was stopped."
    )
    assert len(client.requests) == 3  # no model call after the stop


async def test_different_errors_do_not_stop_the_request() -> None:
    errors = iter([ToolError("a"), ToolError("b"), ToolError("a"), None])

    class Flaky(RecordingTool):
        async def invoke(self, arguments):  # type: ignore[no-untyped-def]
            error = next(errors)
            if error:
                raise error
            return "fine"

    loop, _ = loop_with(
        Flaky("echo"),
        [*same_call(1, n=1), *same_call(1, n=2), *same_call(1, n=3), *same_call(1, n=4), ScriptStep(text="ok")],
    )
    turn = await loop.run("go")
    assert [c.result for c in turn.tool_calls] == ["a", "b", "a", "fine"]


async def test_missing_parameter_becomes_a_numbered_recovery_directive() -> None:
    tool = RecordingTool("read_file", required=("path",))
    steps = [ScriptStep(tool_calls=(ScriptedToolCall(name="read_file", arguments={}),)), ScriptStep(text="ok")]
    loop, _ = loop_with(tool, steps)
    turn = await loop.run("go")
    directive = turn.tool_calls[0].result
    assert "the parameter 'path'" in directive
    assert "1. " in directive and "4. Do not retry with empty arguments ({})" in directive
    assert "Exception" not in directive and "Traceback" not in directive


async def test_empty_argument_retries_are_refused_after_three_directives() -> None:
    tool = RecordingTool("read_file", required=("path",))
    steps = [ScriptStep(tool_calls=(ScriptedToolCall(name="read_file", arguments={}),)) for _ in range(4)]
    loop, _ = loop_with(tool, [*steps, ScriptStep(text="ok")])
    turn = await loop.run("go")
    assert len(tool.calls) == 3
    assert all("the parameter 'path'" in c.result for c in turn.tool_calls[:3])
    assert turn.tool_calls[3].result.startswith("'read_file' already ran 3 times in a row")


async def test_non_argument_errors_are_not_swallowed_by_the_resilient_step() -> None:
    async def failing(invocation: ToolInvocation) -> ToolOutcome:
        raise ToolError("real failure")

    invocation = ToolInvocation(call=make_tool_call("c1", "t", "{}"), tool=None, arguments={})
    with pytest.raises(ToolError, match="real failure"):
        await ResilientArgumentsMiddleware()(invocation, failing)


async def test_json_error_inside_a_tool_is_explained_with_the_tool_name() -> None:
    async def failing(invocation: ToolInvocation) -> ToolOutcome:
        json.loads("{bad")
        raise AssertionError

    invocation = ToolInvocation(call=make_tool_call("c1", "t", "{}"), tool=None, arguments={})
    outcome = await ResilientArgumentsMiddleware()(invocation, failing)
    assert outcome.result.startswith("Tool 't' could not parse the arguments JSON: ")
    assert outcome.success is False


async def test_resilient_function_invoker_has_the_same_behaviour() -> None:
    tool = RecordingTool("read_file", required=("path",))
    assert "the parameter 'path'" in await resilient_function_invoker(tool, {})
    assert await resilient_function_invoker(tool, {"path": "a"}) == "read_file: {'path': 'a'}"
    with pytest.raises(ToolError):
        await resilient_function_invoker(RecordingTool("x", fail_with=ToolError("no")), {})


async def test_directive_without_a_parameter_name_is_generic() -> None:
    async def failing(invocation: ToolInvocation) -> ToolOutcome:
        raise ToolArgumentError("the value is out of range")

    invocation = ToolInvocation(call=make_tool_call("c1", "t", "{}"), tool=None, arguments={})
    outcome = await ResilientArgumentsMiddleware()(invocation, failing)
    assert "the parameters the error names" in outcome.result


async def test_custom_middleware_can_be_added_by_embedders() -> None:
    seen: list[str] = []

    class Audit:
        async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
            seen.append(invocation.call.name)
            return await next_step(invocation)

    tool = RecordingTool("echo")
    client = ScriptedChatClient([*same_call(1), ScriptStep(text="ok")])
    pipeline = GUARDS.with_middleware(Audit())
    await AgentLoop(client, clock=FakeClock(), tools=[tool], pipeline=pipeline).run("go")
    assert seen == ["echo"]
