"""The SDK's public names: importable from ``ironhive`` lazily, the same objects as at home, typed for mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ironhive
from ironhive.adapters.scripted.client import ScriptedChatClient
from ironhive.adapters.tools.function_tool import tool
from ironhive.domain import errors, turn
from ironhive.domain.agent_loop import AgentLoop
from ironhive.ports import chat, tools

USAGE = Path(__file__).with_name("typed_usage.py")


def test_every_public_name_resolves_to_the_object_at_its_home() -> None:
    for name in ironhive.__all__:
        assert getattr(ironhive, name) is not None, name
    assert ironhive.tool is tool
    assert ironhive.AgentLoop is AgentLoop
    assert ironhive.ScriptedChatClient is ScriptedChatClient
    assert ironhive.ChatOptions is chat.ChatOptions
    assert ironhive.Tool is tools.Tool
    assert ironhive.TextDelta is turn.TextDelta
    assert ironhive.AgentChunk is turn.AgentChunk
    assert ironhive.IronHiveError is errors.IronHiveError
    assert ironhive.ToolArgumentError is errors.ToolArgumentError
    assert set(ironhive.__all__) <= set(dir(ironhive))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = ironhive.nothing  # type: ignore[attr-defined]


def test_importing_ironhive_imports_nothing_else_of_it() -> None:
    code = "import sys, ironhive; print(sorted(m for m in sys.modules if m.startswith(('ironhive.', 'pydantic'))))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout == "[]\n"


def test_the_sdk_usage_passes_mypy_strict(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), str(USAGE)],
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_sdk_usage_runs() -> None:
    completed = subprocess.run([sys.executable, str(USAGE)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["Sunny in Paris ok", "okNone", "city"]
