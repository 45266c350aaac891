"""The README's SDK example: one custom tool, one turn (OPENAI_API_KEY; OPENAI_BASE_URL for another server)."""

import os

from ironhive import IronHiveContainer, tool


@tool
def weather(city: str) -> str:
    """Current weather in a city."""
    return f"Sunny in {city}"


with IronHiveContainer().add_ironhive_with_openai(os.environ["OPENAI_API_KEY"], tools=[weather]) as hive:
    print(hive.agent_loop().run_sync("Weather in Paris?").content)
