"""The SDK samples run as written against a loopback OpenAI server, and pass ``mypy --strict``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.openai_server import LoopbackOpenAIServer

SAMPLES = Path(__file__).parents[2] / "samples" / "sdk-quickstart"


def run_sample(name: str, server: LoopbackOpenAIServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-loopback-test",
        "OPENAI_BASE_URL": server.base_url,
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-W", "error", str(SAMPLES / name)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_the_readme_example_is_at_most_15_lines() -> None:
    assert len((SAMPLES / "weather.py").read_text().splitlines()) <= 15


def test_the_tool_result_reaches_the_model(tmp_path: Path) -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_tool_calls([("call_1", "weather", {"city": "Paris"})])
        server.enqueue_text("It is sunny in Paris.")
        completed = run_sample("weather.py", server, tmp_path)
        requests = server.requests
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "It is sunny in Paris.\n"
    assert completed.stderr == ""
    first, second = requests
    assert first["model"] == "gpt-4o-mini"
    [offered] = first["tools"]
    assert offered["function"]["name"] == "weather"
    assert offered["function"]["description"] == "Current weather in a city."
    assert offered["function"]["parameters"]["required"] == ["city"]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "Sunny in Paris"}


def test_a_missing_argument_reaches_the_model_as_a_recovery_directive(tmp_path: Path) -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_tool_calls([("call_1", "weather", {})])
        server.enqueue_text("Which city?")
        completed = run_sample("weather.py", server, tmp_path)
        requests = server.requests
    assert completed.returncode == 0, completed.stderr
    directive = requests[1]["messages"][-1]["content"]
    assert "city" in directive and "KeyError" not in directive


def test_the_streaming_sample_prints_text_as_it_arrives(tmp_path: Path) -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_tool_calls([("call_1", "forecast", {"city": "Oslo", "days": "2"})])
        server.enqueue_text("Sunny twice.", chunks=["Sunny ", "twice."])
        completed = run_sample("streaming.py", server, tmp_path)
        requests = server.requests
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "Sunny twice.\n(1 tool call(s))\n"
    assert json.loads(requests[1]["messages"][-1]["content"]) == ["Oslo: sunny", "Oslo: sunny"]


def test_the_samples_pass_mypy_strict() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, sorted(SAMPLES.glob("*.py")))],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_readme_shows_the_sample_as_it_is() -> None:
    readme = (SAMPLES.parents[1] / "README.md").read_text()
    section = readme.split("## Using the SDK", 1)[1]
    shown = section.split("```python\n", 1)[1].split("```", 1)[0]
    sample = (SAMPLES / "weather.py").read_text()
    assert shown.strip() == sample.split('"""\n', 1)[1].strip()
