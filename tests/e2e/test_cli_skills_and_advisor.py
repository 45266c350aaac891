"""Agent Skills and the advisor through the real CLI: the skill list in the instructions, ``load_skill``, and an
advisor on a second provider seeing the conversation as a transcript."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer


def test_skills_are_listed_and_loaded(tmp_path: Path) -> None:
    work = tmp_path / "work"
    skill = work / ".ironhive" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Writes release notes from the git log.\n---\n"
        "Step 1: read the log.\nStep 2: group by type.\n"
    )
    home = tmp_path / "home"
    (home / ".ironhive").mkdir(parents=True)
    (home / ".ironhive" / "config.yaml").write_text(
        "skills:\n  roots: [.ironhive/skills]\nwebSearch:\n  enabled: false\n"
    )
    with LoopbackOpenAIServer() as server:
        server.enqueue_tool_calls([("c1", "load_skill", {"name": "release-notes"})])
        server.enqueue_text("Following the skill.")
        completed = run_ironhive(
            "-p",
            "Write release notes",
            "-o",
            "jsonl",
            cwd=work,
            home=home,
            env={"OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "gpt-test", "OPENAI_ENDPOINT": server.base_url},
        )
        first = server.requests[0]
    assert completed.returncode == 0, completed.stderr
    system = first["messages"][0]["content"]
    assert "# Skills" in system and "**release-notes**: Writes release notes from the git log." in system
    result = next(line for line in map(json.loads, completed.stdout.splitlines()) if line["type"] == "tool_result")
    assert result["success"] is True and "Step 2: group by type." in result["result"]
    assert "---" not in result["result"]


def test_the_advisor_consults_a_second_provider(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ironhive").mkdir(parents=True)
    with LoopbackOpenAIServer() as worker, LoopbackOpenAIServer() as advisor:
        (home / ".ironhive" / "config.yaml").write_text(
            "advisor:\n  provider: lmstudio\n  model: strong-model\n  maxCalls: 1\n"
            f"lmstudio:\n  enabled: true\n  endpoint: {advisor.base_url}\n  model: strong-model\n"
            "webSearch:\n  enabled: false\n"
        )
        worker.enqueue_tool_calls([("c1", "advisor", {})])
        worker.enqueue_tool_calls([("c2", "advisor", {})])
        worker.enqueue_text("Done, as advised.")
        advisor.enqueue_text("Check the edge cases before declaring done.")
        completed = run_ironhive(
            "-p",
            "Plan the migration",
            "-o",
            "jsonl",
            cwd=tmp_path,
            home=home,
            env={"OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "gpt-test", "OPENAI_ENDPOINT": worker.base_url},
        )
        consulted = advisor.requests
    assert completed.returncode == 0, completed.stderr
    results = [line for line in map(json.loads, completed.stdout.splitlines()) if line["type"] == "tool_result"]
    assert results[0]["result"] == "Check the edge cases before declaring done."
    assert results[1]["result"] == (
        "The advisor has already been consulted 1 times in this session. Proceed on your own judgment."
    )
    [request] = consulted
    assert request["model"] == "strong-model" and "tools" not in request
    transcript = request["messages"][-1]["content"]
    assert "Plan the migration" in transcript and "-> calls advisor({})" in transcript
