"""run_sync and run_streaming_sync: one private loop, early stops, errors, per-turn tool names, close()."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Sequence

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.adapters.tools.function_tool import tool
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ProviderError, TurnOptionsError
from ironhive.domain.turn import AgentChunk, TextDelta, TurnCompleted
from ironhive.ports.chat import ChatMessage, ChatOptions, ChatResponse, ChatUpdate, Role, Usage
from tests.support.fakes import FakeClock


@tool
def weather(city: str) -> str:
    """Current weather in a city."""
    return f"Sunny in {city}"


@tool
def time_in(city: str) -> str:
    """Local time in a city."""
    return f"Noon in {city}"


def weather_script() -> ScriptedChatClient:
    return ScriptedChatClient(
        [
            ScriptStep(tool_calls=(ScriptedToolCall(name="weather", arguments={"city": "Paris"}),)),
            ScriptStep(text="It is sunny in Paris.", usage=Usage(input_tokens=3, output_tokens=5)),
        ]
    )


def agent(client: object, **kwargs: object) -> AgentLoop:
    return AgentLoop(client, clock=FakeClock(), tools=[weather, time_in], **kwargs)  # type: ignore[arg-type]


class LoopRecordingClient:
    """Streams a fixed answer, recording the event loop of every call and whether each stream was closed."""

    def __init__(self, pieces: Sequence[str] = ("one ", "two ", "three")) -> None:
        self.pieces = tuple(pieces)
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.closed_streams = 0

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        self.loops.append(asyncio.get_running_loop())
        return ChatResponse(message=ChatMessage.of_text(Role.ASSISTANT, "".join(self.pieces)), finish_reason="stop")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        self.loops.append(asyncio.get_running_loop())
        try:
            for piece in self.pieces:
                await asyncio.sleep(0)
                yield ChatUpdate(text_delta=piece)
            yield ChatUpdate(finish_reason="stop")
        finally:
            self.closed_streams += 1


def test_run_sync_runs_a_turn_with_its_tool_calls() -> None:
    loop = agent(weather_script())
    try:
        turn = loop.run_sync("Weather in Paris?")
    finally:
        loop.close()
    assert turn.content == "It is sunny in Paris."
    [call] = turn.tool_calls
    assert (call.name, call.result, call.success) == ("weather", "Sunny in Paris", True)
    assert [message.role for message in loop.history] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]


def test_run_streaming_sync_yields_the_chunks_run_streaming_yields() -> None:
    async def streamed() -> list[AgentChunk]:
        return [chunk async for chunk in agent(weather_script()).run_streaming("Weather in Paris?")]

    expected = asyncio.run(streamed())
    loop = agent(weather_script())
    try:
        chunks = list(loop.run_streaming_sync("Weather in Paris?"))
    finally:
        loop.close()
    assert [chunk.kind for chunk in chunks] == [chunk.kind for chunk in expected]
    assert chunks[:-1] == expected[:-1]
    assert isinstance(chunks[-1], TurnCompleted) and isinstance(expected[-1], TurnCompleted)
    assert chunks[-1].turn.content == expected[-1].turn.content == "It is sunny in Paris."


def test_every_sync_call_uses_the_same_private_loop_until_close() -> None:
    client = LoopRecordingClient()
    loop = agent(client)
    loop.run_sync("first")
    list(loop.run_streaming_sync("second"))
    loop.run_sync("third")
    first_loop = client.loops[0]
    assert client.loops == [first_loop] * 3
    assert not first_loop.is_closed()
    loop.close()
    assert first_loop.is_closed()
    loop.close()  # idempotent
    loop.run_sync("after close")  # a new loop
    assert client.loops[-1] is not first_loop
    loop.close()


def test_breaking_out_of_run_streaming_sync_closes_the_turn_and_keeps_the_history() -> None:
    client = LoopRecordingClient()
    loop = agent(client)
    try:
        loop.run_sync("before")
        for chunk in loop.run_streaming_sync("stopped early"):
            assert isinstance(chunk, TextDelta)
            break
        assert client.closed_streams == 1  # run_sync does not stream
        assert [message.text for message in loop.history] == ["before", "one two three"]
        assert loop.run_sync("after").content == "one two three"
    finally:
        loop.close()


def test_closing_the_iterator_explicitly_stops_the_turn() -> None:
    client = LoopRecordingClient()
    loop = agent(client)
    try:
        chunks = loop.run_streaming_sync("stopped")
        assert next(chunks) == TextDelta(text="one ")
        chunks.close()
        assert client.closed_streams == 1
        assert loop.history == ()
        unstarted = loop.run_streaming_sync("never iterated")
        unstarted.close()
        assert len(client.loops) == 1
    finally:
        loop.close()


def test_an_error_of_the_turn_reaches_the_sync_caller() -> None:
    loop = agent(ScriptedChatClient([ScriptStep(error=ProviderError("quota", status=429))]))
    try:
        with pytest.raises(ProviderError, match="quota"):
            loop.run_sync("hi")
        with pytest.raises(ProviderError, match="script"):
            list(loop.run_streaming_sync("hi"))
        with pytest.raises(ValueError, match="must not be empty"):
            loop.run_sync("  ")
    finally:
        loop.close()


async def test_sync_methods_inside_a_running_loop_say_to_await_instead() -> None:
    loop = agent(LoopRecordingClient())
    with pytest.raises(RuntimeError, match=r"run_sync\(\) cannot be called while an event loop is running") as caught:
        loop.run_sync("hi")
    assert "use `await agent.run(...)` there instead" in str(caught.value)
    with pytest.raises(RuntimeError, match=r"async for chunk in agent.run_streaming\(...\)"):
        loop.run_streaming_sync("hi")
    assert (await loop.run("hi")).content == "one two three"
    loop.close()


async def test_close_runs_finalizers_on_the_private_loop_also_from_async_code() -> None:
    client = LoopRecordingClient()
    loop = agent(client)
    await asyncio.to_thread(loop.run_sync, "in a worker thread")
    finalized_on: list[asyncio.AbstractEventLoop] = []

    async def finalize() -> None:
        finalized_on.append(asyncio.get_running_loop())

    loop.close(finalize)
    assert finalized_on == client.loops
    assert client.loops[0].is_closed()
    loop.close(finalize)  # no loop any more: a fresh one runs the finalizer
    assert len(finalized_on) == 2 and finalized_on[1] is not client.loops[0]


def test_tools_by_name_or_object_choose_the_tools_offered_this_turn() -> None:
    client = ScriptedChatClient([ScriptStep(text="ok")], repeat_last=True)
    loop = agent(client)
    try:
        loop.run_sync("all")
        loop.run_sync("one", tools=["time_in"])
        loop.run_sync("object", tools=[weather])
        loop.run_sync("none", tools=[])
        loop.run_sync("one name", tools="weather")
        list(loop.run_streaming_sync("streamed", ChatOptions(temperature=0.5), tools=["weather", "weather"]))
        with pytest.raises(TurnOptionsError, match=r"not registered on this agent: search\. Registered tools: weather"):
            loop.run_sync("unknown", tools=["search"])
        with pytest.raises(TurnOptionsError):
            loop.run_streaming_sync("unknown", tools=["search"])
    finally:
        loop.close()
    offered = [[spec.name for spec in request.options.tools or ()] for request in client.requests]
    assert offered == [["weather", "time_in"], ["time_in"], ["weather"], [], ["weather"], ["weather"]]
    assert client.requests[-1].options.temperature == 0.5


async def test_tools_choose_the_offered_tools_in_async_runs_too() -> None:
    client = ScriptedChatClient([ScriptStep(text="ok")], repeat_last=True)
    loop = agent(client)
    await loop.run("one", tools=["weather"])
    [_ async for _ in loop.run_streaming("two", tools=[time_in])]
    assert [[spec.name for spec in request.options.tools or ()] for request in client.requests] == [
        ["weather"],
        ["time_in"],
    ]


def test_an_agent_dropped_without_close_closes_its_loop() -> None:
    client = LoopRecordingClient()
    loop = agent(client)
    loop.run_sync("hi")
    del loop
    gc.collect()
    assert client.loops[0].is_closed()
