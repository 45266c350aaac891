"""The published JSON Schema: committed equals generated, valid Draft 2020-12, omission rules, wire lines validate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ironhive.protocol.models import DEFAULT_PROTOCOL, WireModel
from ironhive.protocol.schema import SCHEMA_FILE_NAME, protocol_schema, published_schema_json, schema_json

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "entrypoints" / "protocol" / SCHEMA_FILE_NAME
SNAPSHOT_FILES = [
    ROOT / "tests" / "protocol" / "__snapshots__" / "test_protocol_models.ambr",
    ROOT / "tests" / "e2e" / "__snapshots__" / "test_server_protocol.ambr",
]


def validator(definition: str) -> Draft202012Validator:
    """A validator of one top-level definition (``Request`` or ``Event``) of the published schema."""
    schema = json.loads(published_schema_json())
    return Draft202012Validator({**schema, "anyOf": [{"$ref": f"#/$defs/{definition}"}]})


def test_the_committed_schema_is_the_generated_one() -> None:
    generated = schema_json()
    assert COMMITTED.read_text(encoding="utf-8") == generated, (
        "entrypoints/protocol/turn-stream.schema.json is stale: run `ironhive protocol schema > "
        "entrypoints/protocol/turn-stream.schema.json`"
    )
    assert published_schema_json() == generated  # what the installed package ships


def test_the_schema_is_valid_draft_2020_12_and_covers_every_request_and_event() -> None:
    schema = protocol_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    definitions = schema["$defs"]
    for group, classes in (("Request", DEFAULT_PROTOCOL.requests), ("Event", DEFAULT_PROTOCOL.events)):
        refs = [member["$ref"].rsplit("/", 1)[1] for member in definitions[group]["oneOf"]]
        assert refs == [cls.__name__ for cls in classes.values()]
        for tag, cls in classes.items():
            assert definitions[cls.__name__]["properties"]["type"] == {"const": tag, "type": "string"}
            assert "type" in definitions[cls.__name__]["required"]


def nullable(property_schema: dict[str, Any]) -> bool:
    return property_schema.get("type") == "null" or {"type": "null"} in property_schema.get("anyOf", [])


def wire_models() -> list[type[WireModel]]:
    from ironhive.protocol.models import TurnOptions

    return [*DEFAULT_PROTOCOL.requests.values(), *DEFAULT_PROTOCOL.events.values(), TurnOptions]


@pytest.mark.parametrize("cls", wire_models(), ids=lambda cls: cls.__name__)
def test_omitted_fields_are_neither_required_nor_null_and_written_event_fields_are_required(
    cls: type[WireModel],
) -> None:
    definition = protocol_schema()["$defs"][cls.__name__]
    required = set(definition.get("required", ()))
    for name in cls.wire_omit_when_null | cls.wire_omit_when_false:
        assert name not in required
        assert not nullable(definition["properties"][name]), name
    if cls in DEFAULT_PROTOCOL.events.values():
        written = set(cls.model_fields) - cls.wire_omit_when_null - cls.wire_omit_when_false
        assert written <= required


def snapshot_lines() -> list[str]:
    """Every JSON object line pinned in the protocol snapshots (single events and whole transcripts)."""
    lines: list[str] = []
    for path in SNAPSHOT_FILES:
        for raw in path.read_text(encoding="utf-8").splitlines():
            text = raw.strip().strip("'")
            if text.startswith('{"type":'):
                lines.append(text.encode().decode("unicode_escape") if "\\\\" in text else text)
    return lines


def test_every_pinned_event_line_validates_against_the_schema() -> None:
    events, requests = validator("Event"), validator("Request")
    checked = 0
    for line in snapshot_lines():
        value = json.loads(line)
        target = requests if value["type"] in DEFAULT_PROTOCOL.requests else events
        errors = [error.message for error in target.iter_errors(value)]
        assert errors == [], line
        checked += 1
    assert checked > 30


def test_a_line_that_breaks_an_omission_rule_fails_the_schema() -> None:
    events = validator("Event")
    assert not events.is_valid({"type": "turn_end", "input_tokens": 1})  # written-always fields are required
    assert not events.is_valid(
        {"type": "hitl_request", "id": "1", "action": "a", "target": "t", "description": "d", "scope": None}
    )
    assert validator("Request").is_valid({"type": "user_message", "content": "x", "options": {"max_output_tokens": 5}})
    assert not validator("Request").is_valid({"type": "user_message", "content": "x", "options": None})


def test_ironhive_protocol_schema_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    from ironhive.cli.main import main

    assert main(["protocol", "schema"]) == 0
    assert capsys.readouterr().out == schema_json()


def test_the_schema_names_no_python_types() -> None:
    assert not re.search(r"\b(Optional|NoneType|Annotated)\b", schema_json())
