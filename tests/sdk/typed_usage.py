"""SDK usage through the public names only: checked by mypy --strict and run by tests/sdk/test_public_api.py."""

from __future__ import annotations

import asyncio

from ironhive import (
    AgentChunk,
    AgentLoop,
    ChatOptions,
    IronHiveError,
    ScriptedChatClient,
    ScriptedToolCall,
    ScriptStep,
    TextDelta,
    Tool,
    ToolArgumentError,
    TurnCompleted,
    TurnRecord,
    tool,
)
from ironhive.adapters.system import SystemClock


@tool
def weather(city: str, days: int = 1) -> str:
    """Current weather in a city.

    Args:
        city: The city.
        days: Days ahead.
    """
    return f"Sunny in {city}"


@tool(name="local_time")
async def time_in(city: str) -> str:
    """Local time in a city."""
    return f"Noon in {city}"


def main() -> None:
    direct: str = weather("Paris", days=2)
    tools: list[Tool] = [weather, time_in]
    client = ScriptedChatClient(
        [
            ScriptStep(tool_calls=(ScriptedToolCall(name="weather", arguments={"city": "Paris"}),)),
            ScriptStep(text="ok"),
        ],
        repeat_last=True,
    )
    agent = AgentLoop(client, clock=SystemClock(), tools=tools)
    turn: TurnRecord = agent.run_sync("Weather in Paris?", tools=["weather"])
    print(direct, turn.content)
    chunk: AgentChunk
    for chunk in agent.run_streaming_sync("And now?", ChatOptions(temperature=0.2), tools=[weather]):
        if isinstance(chunk, TextDelta):
            print(chunk.text, end="")
        elif isinstance(chunk, TurnCompleted):
            print(chunk.turn.usage.total_tokens)
    try:
        asyncio.run(weather.invoke({}))
    except ToolArgumentError as error:
        print(error.parameter)
    except IronHiveError:
        raise
    agent.close()


if __name__ == "__main__":
    main()
