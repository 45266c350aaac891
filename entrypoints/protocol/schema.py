"""The turn-stream protocol's JSON Schema (Draft 2020-12), generated from the wire models so it cannot drift.

The schema describes what goes over the wire, which is not quite what the models accept: a field a model lists in
``wire_omit_when_null`` (or ``wire_omit_when_false``) is left out instead of written as null, so it is neither required
nor typed as null. Every other event field is always written, so an event requires it (nullable where the model says
so); a request requires only what the agent cannot do without. Unknown properties are allowed everywhere (readers
ignore them). ``schema_json()`` is the text committed as ``turn-stream.schema.json`` beside this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from ironhive.protocol.models import DEFAULT_PROTOCOL, ProtocolRegistry, ServerEvent, WireModel

SCHEMA_FILE_NAME = "turn-stream.schema.json"
"""The published schema's file name inside the ``ironhive.protocol`` package."""

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_REF = "#/$defs/{model}"
# pydantic leaves a numeric constraint under its own name when it sits behind a validator; JSON Schema's names:
_CONSTRAINTS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


class _WireJsonSchema(GenerateJsonSchema):
    """pydantic's generator without per-property titles (they only repeat the field names)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def protocol_schema(protocol: ProtocolRegistry = DEFAULT_PROTOCOL) -> dict[str, Any]:
    """Build the JSON Schema of every request and event of ``protocol``.

    Args:
        protocol: The registry to describe (the built-in protocol unless told otherwise).

    Returns:
        A Draft 2020-12 schema: ``$defs`` holds one definition per request and event class plus ``Request`` and
        ``Event`` (a ``oneOf`` keyed by the constant ``type``); the document itself accepts either.
    """
    requests = list(protocol.requests.values())
    events = list(protocol.events.values())
    keys, generated = models_json_schema(
        [(cls, "validation") for cls in [*requests, *events]], ref_template=_REF, schema_generator=_WireJsonSchema
    )
    definitions: dict[str, Any] = generated.get("$defs", {})
    for cls in _wire_models([*requests, *events]):
        name = cls.__name__
        if name in definitions:
            definitions[name] = _wire_definition(cls, definitions[name], written_always=issubclass(cls, ServerEvent))
    definitions["Request"] = {
        "description": "A line a client sends to the agent.",
        "oneOf": [keys[(cls, "validation")] for cls in requests],
    }
    definitions["Event"] = {
        "description": "A line the agent sends to the client.",
        "oneOf": [keys[(cls, "validation")] for cls in events],
    }
    return {
        "$schema": DIALECT,
        "title": "ironhive turn-stream protocol",
        "description": (
            "One compact JSON object per line, snake_case properties, `type` first. A line is a Request "
            "(client to agent) or an Event (agent to client); see #/$defs/Request and #/$defs/Event."
        ),
        "anyOf": [{"$ref": "#/$defs/Request"}, {"$ref": "#/$defs/Event"}],
        "$defs": _normalised(dict(sorted(definitions.items()))),
    }


def schema_json(protocol: ProtocolRegistry = DEFAULT_PROTOCOL) -> str:
    """The schema as the committed file holds it: indented JSON, keys in generation order, a final newline."""
    return json.dumps(protocol_schema(protocol), indent=2, ensure_ascii=False) + "\n"


def published_schema_json() -> str:
    """The schema file shipped in the package (equal to :func:`schema_json`; a test keeps it so)."""
    return resources.files("ironhive.protocol").joinpath(SCHEMA_FILE_NAME).read_text(encoding="utf-8")


def _wire_models(roots: Iterable[type[BaseModel]]) -> list[type[WireModel]]:
    """The roots and every wire model their fields hold (``TurnOptions`` inside ``user_message``)."""
    found: list[type[WireModel]] = []
    pending = list(roots)
    while pending:
        cls = pending.pop()
        if not issubclass(cls, WireModel) or cls in found:
            continue
        found.append(cls)
        for field in cls.model_fields.values():
            pending.extend(_models_in(field.annotation))
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in getattr(annotation, "__args__", ()) for model in _models_in(argument)]


def _wire_definition(cls: type[WireModel], definition: dict[str, Any], *, written_always: bool) -> dict[str, Any]:
    """Apply the wire's omission rules to one generated definition.

    Args:
        cls: The model.
        definition: pydantic's definition of it.
        written_always: Whether the agent writes every field not omitted (events), so each is required.
    """
    omitted = cls.wire_omit_when_null | cls.wire_omit_when_false
    properties: dict[str, Any] = {}
    for name, schema in definition.get("properties", {}).items():
        schema = dict(schema)
        if name == "type" and "const" in schema:
            schema.pop("default", None)  # always written: a constant, not a default
        elif name in cls.wire_omit_when_null:
            schema = _without_null(schema)
        properties[name] = schema
    required = set(definition.get("required", ()))
    if "type" in properties:
        required.add("type")
    if written_always:
        required |= {name for name in properties if name not in omitted}
    result = {key: value for key, value in definition.items() if key not in ("properties", "required")}
    result["properties"] = properties
    if required:
        result["required"] = [name for name in properties if name in required]
    return result


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A property that is left out when null: drop its null alternative and its null default."""
    if schema.get("default", ...) is None:
        schema.pop("default")
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        schema.pop("anyOf")
        if len(kept) == 1:
            schema = {**kept[0], **schema}
        else:
            schema["anyOf"] = kept
    return schema


def _normalised(value: Any) -> Any:
    """Rename pydantic's leftover constraint names to JSON Schema's, everywhere in the document."""
    if isinstance(value, dict):
        return {
            (_CONSTRAINTS.get(key, key) if not isinstance(item, dict | list) else key): _normalised(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_normalised(item) for item in value]
    return value
