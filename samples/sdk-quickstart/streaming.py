"""Streaming a turn from synchronous code: text as it arrives, then the tool calls the turn made."""

import os

from ironhive import IronHiveContainer, TextDelta, TurnCompleted, tool


@tool
async def forecast(city: str, days: int = 3) -> list[str]:
    """The forecast for the next days.

    Args:
        city: The city.
        days: How many days ahead.
    """
    return [f"{city}: sunny" for _ in range(days)]


with IronHiveContainer().add_ironhive_with_openai(os.environ["OPENAI_API_KEY"], tools=[forecast]) as hive:
    for chunk in hive.agent_loop().run_streaming_sync("Forecast for Oslo, 2 days?"):
        if isinstance(chunk, TextDelta):
            print(chunk.text, end="", flush=True)
        elif isinstance(chunk, TurnCompleted):
            print(f"\n({len(chunk.turn.tool_calls)} tool call(s))")
