"""The conformance kit against the real ``ironhive run --server``: every shipped transcript passes, an altered one fails
naming its line, and every event line the server wrote validates against the published schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ironhive.protocol.conformance import check, load_transcript, shipped_transcripts
from ironhive.protocol.schema import published_schema_json
from tests.support.cli import clean_environment, ironhive_executable

TRANSCRIPTS = shipped_transcripts()
BEHAVIOURS = {
    "plain-turn",
    "tool-round",
    "approval-by-id",
    "approval-without-id",
    "approval-timeout",
    "approval-end-of-input",
    "cancel",
    "options",
    "fallback",
    "compaction",
    "unreadable-line",
    "shutdown",
    "model-error",
}


def event_validator() -> Draft202012Validator:
    schema = json.loads(published_schema_json())
    return Draft202012Validator({**schema, "anyOf": [{"$ref": "#/$defs/Event"}]})


def test_a_transcript_ships_for_every_documented_behaviour() -> None:
    assert {path.stem for path in TRANSCRIPTS} == BEHAVIOURS
    for path in TRANSCRIPTS:
        transcript = load_transcript(path)
        assert transcript.name == path.stem and transcript.description


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda path: path.stem)
def test_ironhive_run_server_passes_the_transcript_and_every_line_fits_the_schema(path: Path) -> None:
    result = check(load_transcript(path))
    assert result.report() == f"{path.name}: ok ({len(result.transcript.steps)} lines)\n"
    validator = event_validator()
    assert result.lines
    for line in result.lines:
        assert [error.message for error in validator.iter_errors(json.loads(line))] == [], line


def altered(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = (Path(str(shipped_transcripts()[0].parent)) / f"{name}.jsonl").read_text(encoding="utf-8")
    assert text.count(old) == 1
    target = tmp_path / f"{name}-altered.jsonl"
    target.write_text(text.replace(old, new), encoding="utf-8")
    return target


def test_an_altered_transcript_fails_naming_each_line_that_differs(tmp_path: Path) -> None:
    path = altered(tmp_path, "plain-turn", '"content": "there."', '"content": "there!"')
    path.write_text(path.read_text().replace('"total_tokens": 15', '"total_tokens": 16'))
    result = check(load_transcript(path))
    assert [(d.line, d.message.split(" (event:")[0]) for d in result.differences] == [
        (5, 'content: expected "there!", got "there."'),
        (6, "total_tokens: expected 16, got 15"),
    ]


def test_a_missing_event_and_an_extra_event_are_reported(tmp_path: Path) -> None:
    path = altered(tmp_path, "shutdown", '{"out": {"type": "text_delta", "content": "Two."}}\n', "")
    result = check(load_transcript(path), timeout=5)
    first, second = result.differences
    assert first.line == 9 and first.message.startswith('the event: expected a turn_end, got a "text_delta"')
    assert second.line == 10 and second.message.startswith("unexpected event before the end of the output: ")


def test_the_cli_check_exits_1_and_prints_the_line_and_0_when_all_pass(tmp_path: Path) -> None:
    path = altered(
        tmp_path,
        "plain-turn",
        '"input_tokens": 12, "output_tokens": 3, "total',
        '"input_tokens": {"$regex": "12"}, "output_tokens": 3, "total',
    )
    environment = clean_environment(tmp_path)
    failing = subprocess.run(
        [ironhive_executable(), "protocol", "check", str(path)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert failing.returncode == 1
    assert failing.stdout.startswith(
        "plain-turn-altered.jsonl:6: input_tokens: expected a string matching '12', got 12"
    )
    passing = subprocess.run(
        [
            ironhive_executable(),
            "protocol",
            "check",
            "plain-turn",
            "--",
            sys.executable,
            "-m",
            "ironhive",
            "run",
            "--server",
            "--provider",
            "scripted",
            "-m",
            "{script}",
            "--session-id",
            "conformance",
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert (passing.returncode, passing.stdout) == (0, "plain-turn.jsonl: ok (7 lines)\n"), passing.stderr
