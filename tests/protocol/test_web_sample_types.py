"""The web sample's TypeScript protocol types (samples/web-ai-chat/lib/protocol.ts) agree with the published schema:
the same events, requests and fields, the same optionality and nullability, matching types."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ironhive.protocol.schema import published_schema_json

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "samples" / "web-ai-chat" / "lib" / "protocol.ts"
SCHEMA = json.loads(published_schema_json())
DEFS: dict[str, Any] = SCHEMA["$defs"]
JSON_VALUE = "JsonValue"


def split_top(text: str, separator: str) -> list[str]:
    """Split ``text`` on ``separator`` outside braces and brackets."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char in "{[(") - (char in "}])")
        if char == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def type_alias(name: str) -> str:
    """The text after ``export type NAME =`` up to its closing semicolon (no comments inside)."""
    source = PROTOCOL_TS.read_text(encoding="utf-8")
    match = re.search(rf"export type {name} =(.*?);\n\n", source, re.S)
    assert match, f"protocol.ts has no `export type {name}`"
    return " ".join(match.group(1).split())


def object_fields(text: str) -> dict[str, tuple[bool, str]]:
    """``{ a: T; b?: U }`` → ``{"a": (False, "T"), "b": (True, "U")}`` (optional flag, normalised type)."""
    body = text.strip()
    assert body.startswith("{") and body.endswith("}"), body
    fields = {}
    for member in split_top(body[1:-1], ";"):
        name, _, kind = member.partition(":")
        optional = name.strip().endswith("?")
        fields[name.strip().rstrip("?")] = (optional, " ".join(kind.split()))
    return fields


def ts_type(schema: dict[str, Any]) -> str:
    """The TypeScript spelling of a property's schema, as protocol.ts writes it."""
    if "anyOf" in schema:
        return " | ".join(ts_type(option) for option in schema["anyOf"])
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return JSON_VALUE if name == "JsonValue" else name
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return ts_type(schema["items"]) + "[]"
    if kind == "object":
        return "{ [key: string]: " + ts_type(schema.get("additionalProperties", {})) + " }"
    if kind is None:
        return JSON_VALUE
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}[kind]


def expected_fields(definition: str) -> dict[str, tuple[bool, str]]:
    schema = DEFS[definition]
    required = set(schema.get("required", ()))
    return {name: (name not in required, ts_type(prop)) for name, prop in schema["properties"].items()}


def union_members(alias: str) -> dict[str, dict[str, tuple[bool, str]]]:
    members = {}
    for member in split_top(type_alias(alias), "|"):
        fields = object_fields(member)
        members[json.loads(fields["type"][1])] = fields
    return members


@pytest.mark.parametrize(("alias", "group"), [("AgentEvent", "Event"), ("AgentRequest", "Request")])
def test_every_member_has_the_schema_fields_with_the_same_optionality_and_types(alias: str, group: str) -> None:
    members = union_members(alias)
    definitions = [ref["$ref"].rsplit("/", 1)[1] for ref in DEFS[group]["oneOf"]]
    expected = {DEFS[name]["properties"]["type"]["const"]: expected_fields(name) for name in definitions}
    assert sorted(members) == sorted(expected)
    for tag, fields in expected.items():
        assert members[tag] == fields, tag


def test_turn_options_match_the_schema() -> None:
    assert object_fields(type_alias("TurnOptions")) == expected_fields("TurnOptions")


def test_the_parser_sees_a_missing_field() -> None:
    fields = object_fields('{ type: "fallback"; kind: "retry"; message: string }')
    assert fields != expected_fields("FallbackEvent")
