"""The advisor tool with two scripted models: the working model calls it, the advisor model reviews the transcript."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from ironhive.adapters.advisor.tap import TurnConversationTap
from ironhive.adapters.advisor.tool import DEFAULT_INSTRUCTIONS, AdvisorTool
from ironhive.adapters.config.schema import AdvisorSection
from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ConfigurationError, ProviderError, ToolError
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline
from ironhive.ports.chat import ChatMessage, JsonValue, Role, ToolSpec, Usage
from ironhive.ports.tools import Tool
from tests.support.fakes import FakeClock

SYSTEM_PROMPT = "You are a coding agent."
FILE_TEXT = "x" * 2500


class ReadFileStub:
    """A read_file stand-in whose result is long enough to be cut in the transcript."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name="read_file",
            description="Read a file.",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        )

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        return FILE_TEXT


def conversation() -> list[ChatMessage]:
    return [
        ChatMessage.of_text(Role.SYSTEM, SYSTEM_PROMPT),
        ChatMessage.of_text(Role.USER, "Fix the bug."),
        ChatMessage.of_text(Role.ASSISTANT, "Looking."),
    ]


async def test_the_advisor_reviews_the_live_conversation_of_an_agent_loop() -> None:
    read_call = ScriptedToolCall(name="read_file", arguments={"path": "a.py"})
    working = ScriptedChatClient(
        [
            ScriptStep(text="Earlier answer."),
            ScriptStep(text="Let me look.", tool_calls=(read_call,)),
            ScriptStep(tool_calls=(ScriptedToolCall(name="advisor"),)),
            ScriptStep(text="Done, following the advice."),
        ]
    )
    advisor_model = ScriptedChatClient([ScriptStep(text="Check the off-by-one in line 3 first.")])
    tap = TurnConversationTap()
    loop: AgentLoop | None = None

    def history() -> tuple[ChatMessage, ...]:
        assert loop is not None
        return loop.history

    advisor = AdvisorTool(advisor_model, conversation=tap.conversation(history, SYSTEM_PROMPT), model="big-model")
    loop = AgentLoop(
        working,
        clock=FakeClock(),
        tools=[ReadFileStub(), advisor],
        system_prompt=SYSTEM_PROMPT,
        pipeline=ToolInvocationPipeline([tap]),
    )
    await loop.run("Earlier question")

    turn = await loop.run("Fix the bug in a.py")

    assert [(call.name, call.result, call.success) for call in turn.tool_calls][1:] == [
        ("advisor", "Check the off-by-one in line 3 first.", True)
    ]
    assert len(advisor_model.requests) == 1
    request = advisor_model.requests[0]
    assert request.options.tools == ()
    assert request.options.model == "big-model"
    assert not request.streaming
    assert [message.role for message in request.messages] == [Role.SYSTEM, Role.USER]
    assert request.messages[0].text == DEFAULT_INSTRUCTIONS
    cut = f"{'x' * 2000} ... [500 more characters cut]"
    assert request.messages[1].text == (
        "Here is the agent's conversation so far.\n\n"
        "## Agent instructions\nYou are a coding agent.\n\n"
        "## User\nEarlier question\n\n"
        "## Agent\nEarlier answer.\n\n"
        "## User\nFix the bug in a.py\n\n"
        '## Agent\nLet me look.\n-> calls read_file({"path": "a.py"})\n\n'
        f"## Tool results\n<- read_file: {cut}\n\n"
        "## Agent\n-> calls advisor({})\n\n"
        "Review the work so far and advise the agent on what to do next."
    )
    # The working model read the advice as the advisor call's result; the advisor saw no tools offered.
    assert working.requests[-1].messages[-1].tool_results[0].result == "Check the off-by-one in line 3 first."
    assert advisor.consultations == 1
    # Outside a tool call the tap publishes no turn.
    assert tap.current_turn() == ()


async def test_after_max_calls_the_advisor_refuses_without_calling_the_model() -> None:
    advisor_model = ScriptedChatClient([ScriptStep(text="Advice.")], repeat_last=True)
    advisor = AdvisorTool(advisor_model, conversation=conversation, max_calls=2)
    assert await advisor.invoke({}) == "Advice."
    assert await advisor.invoke({"ignored": "argument"}) == "Advice."
    refusal = "The advisor has already been consulted 2 times in this session. Proceed on your own judgment."
    assert await advisor.invoke({}) == refusal
    assert await advisor.invoke({}) == refusal
    assert len(advisor_model.requests) == 2


async def test_the_default_cap_is_five() -> None:
    advisor_model = ScriptedChatClient([ScriptStep(text="Advice.")], repeat_last=True)
    advisor = AdvisorTool(advisor_model, conversation=conversation)
    results = [await advisor.invoke({}) for _ in range(6)]
    assert results[:5] == ["Advice."] * 5
    assert results[5] == (
        "The advisor has already been consulted 5 times in this session. Proceed on your own judgment."
    )


async def test_parallel_calls_cannot_overrun_the_cap() -> None:
    async def slow(messages: object, options: object) -> ScriptStep:
        await asyncio.sleep(0.01)
        return ScriptStep(text="Advice.")

    advisor_model = ScriptedChatClient([slow], repeat_last=True)
    advisor = AdvisorTool(advisor_model, conversation=conversation, max_calls=2)
    results = await asyncio.gather(*(advisor.invoke({}) for _ in range(4)))
    refusal = "The advisor has already been consulted 2 times in this session. Proceed on your own judgment."
    assert sorted(results) == sorted(["Advice.", "Advice.", refusal, refusal])
    assert len(advisor_model.requests) == 2


@pytest.mark.parametrize("answer", ["", "   \n"])
async def test_an_empty_answer_is_reported_as_no_advice(answer: str) -> None:
    advisor = AdvisorTool(ScriptedChatClient([ScriptStep(text=answer)]), conversation=conversation)
    assert await advisor.invoke({}) == "The advisor returned no advice. Proceed on your own judgment."


async def test_a_failing_advisor_model_is_a_tool_error_and_does_not_use_up_a_call() -> None:
    failure = ProviderError("HTTP 503 from the advisor provider", status=503, retryable=True)
    advisor_model = ScriptedChatClient([ScriptStep(error=failure), ScriptStep(text="Advice.")])
    advisor = AdvisorTool(advisor_model, conversation=conversation, max_calls=1)
    with pytest.raises(ToolError, match=r"^The advisor could not be consulted: HTTP 503 from the advisor provider$"):
        await advisor.invoke({})
    assert await advisor.invoke({}) == "Advice."


async def test_usage_is_reported_and_custom_instructions_are_sent() -> None:
    seen: list[Usage] = []
    advisor_model = ScriptedChatClient([ScriptStep(text="Advice.", usage=Usage(input_tokens=120, output_tokens=8))])
    advisor = AdvisorTool(advisor_model, conversation=conversation, instructions="Be terse.", on_usage=seen.append)
    await advisor.invoke({})
    assert seen == [Usage(input_tokens=120, output_tokens=8)]
    request = advisor_model.requests[0]
    assert request.messages[0].text == "Be terse."
    assert request.options.model is None
    assert request.messages[1].text == (
        "Here is the agent's conversation so far.\n\n"
        "## Agent instructions\nYou are a coding agent.\n\n## User\nFix the bug.\n\n## Agent\nLooking.\n\n"
        "Review the work so far and advise the agent on what to do next."
    )


def test_spec_takes_no_parameters_and_is_a_tool() -> None:
    advisor = AdvisorTool(ScriptedChatClient(), conversation=conversation)
    assert isinstance(advisor, Tool)
    assert advisor.spec.name == "advisor"
    assert advisor.spec.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


async def test_from_section_and_the_minimum_cap() -> None:
    section = AdvisorSection.model_validate({"provider": "anthropic", "model": "claude-big", "maxCalls": 3})
    advisor_model = ScriptedChatClient([ScriptStep(text="Advice.")], repeat_last=True)
    advisor = AdvisorTool.from_section(section, advisor_model, conversation=conversation)
    assert [await advisor.invoke({}) for _ in range(4)][2:] == [
        "Advice.",
        "The advisor has already been consulted 3 times in this session. Proceed on your own judgment.",
    ]
    assert advisor_model.requests[0].options.model == "claude-big"
    with pytest.raises(ConfigurationError, match=r"^advisor\.maxCalls must be at least 1"):
        AdvisorTool(ScriptedChatClient(), conversation=conversation, max_calls=0)
