"""Simplifies a tool's JSON schema to what llama.cpp's JSON-schema-to-grammar converter handles.

The converter shipped with llama-cpp-python understands ``type`` (one or a list), ``properties``/``required``,
``additionalProperties``, ``items``/``prefixItems`` with ``minItems``/``maxItems``, ``enum``, ``const``,
``oneOf``/``anyOf``, local ``$ref``, ``minLength``/``maxLength`` and the ``date``/``time``/``date-time``/``uuid``
formats. What it does not handle is simplified here, so one unusual schema cannot break the whole grammar:

- ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``/``multipleOf`` are dropped (the converter ignores
  them anyway); ranges are checked after generation by the tools' argument validator.
- ``pattern`` is dropped: the converter accepts only anchored patterns in a subset of regex syntax and fails otherwise.
- ``not``, ``if``/``then``/``else``, ``patternProperties``, ``propertyNames``, ``dependentRequired``,
  ``dependentSchemas``, ``minProperties``/``maxProperties``, ``uniqueItems`` and ``contains`` are dropped.
- ``allOf`` is merged into one object schema (properties and required names of its parts).
- ``$ref`` is inlined, resolved against the tool's own schema (``#/$defs/...``, ``#/definitions/...``); remote or
  recursive references become "any JSON value".
- An object that lists ``properties`` accepts no other keys (``additionalProperties`` is ignored there): a small model
  given room for extra keys fills it, and the validator drops unknown parameters anyway.
- ``minLength``/``maxLength``/``minItems``/``maxItems`` above 64 are dropped (the converter spells every repetition
  out as a rule).
- Literals the converter would spell wrongly are avoided: it does not escape backslashes, so a property name, ``enum``
  value or ``const`` whose JSON spelling holds an escaped quote or backslash would break the grammar. Such properties
  are left out (the model cannot send them) and such ``enum``/``const`` fall back to their type.
- A schema with neither a type nor a structural keyword (``{}``, or only a description) means any JSON value; the
  converter would otherwise read ``{}`` as "an object" and fail on a description-only schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from ironhive.ports.chat import JsonValue

ANY_VALUE: Final[dict[str, JsonValue]] = {"type": ["string", "number", "boolean", "object", "array", "null"]}
"""The schema that allows any JSON value, in the form the converter understands."""

_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_FORMATS: Final = frozenset({"date", "time", "date-time", "uuid"})
_MAX_REPEAT: Final = 64
# Deep enough for real schemas; stops a pathological or self-including one.
_MAX_DEPTH: Final = 32


def grammar_schema(schema: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """Simplify a tool's parameter schema for the grammar converter.

    Args:
        schema: The tool's JSON schema (normally an ``object`` schema).

    Returns:
        A schema with only the features the converter handles, constraining at least as loosely as needed to keep
        every value ``schema`` accepts in the types it names (narrower constraints are validated afterwards).
    """
    return _Simplifier(schema).simplify(schema, depth=0, refs=())


class _Simplifier:
    def __init__(self, root: Mapping[str, JsonValue]) -> None:
        self._root = root

    def simplify(
        self, schema: JsonValue | Mapping[str, JsonValue], *, depth: int, refs: tuple[str, ...]
    ) -> dict[str, JsonValue]:
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return dict(ANY_VALUE)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            if target is None or ref in refs:
                return dict(ANY_VALUE)
            return self.simplify(target, depth=depth + 1, refs=(*refs, ref))
        for union in ("oneOf", "anyOf"):
            alternatives = schema.get(union)
            if isinstance(alternatives, list) and alternatives:
                return {"anyOf": [self.simplify(item, depth=depth + 1, refs=refs) for item in alternatives]}
        if "const" in schema and literal_safe(schema["const"]):
            return {"const": schema["const"]}
        enum = schema.get("enum")
        if isinstance(enum, list) and enum and all(literal_safe(value) for value in enum):
            return {"enum": list(enum)}
        parts = schema.get("allOf")
        if isinstance(parts, list) and parts:
            schema = self._merge(schema, parts, refs)
        types = _types_of(schema)
        if not types:
            return dict(ANY_VALUE)
        if len(types) > 1:
            return {"anyOf": [self._typed(schema, kind, depth=depth, refs=refs) for kind in types]}
        return self._typed(schema, types[0], depth=depth, refs=refs)

    def _typed(
        self, schema: Mapping[str, JsonValue], kind: str, *, depth: int, refs: tuple[str, ...]
    ) -> dict[str, JsonValue]:
        if kind == "object":
            return self._object(schema, depth=depth, refs=refs)
        if kind == "array":
            return self._array(schema, depth=depth, refs=refs)
        result: dict[str, JsonValue] = {"type": kind}
        if kind == "string":
            if schema.get("format") in _FORMATS:
                result["format"] = schema["format"]
            else:
                result.update(_small_bounds(schema, "minLength", "maxLength"))
        return result

    def _object(self, schema: Mapping[str, JsonValue], *, depth: int, refs: tuple[str, ...]) -> dict[str, JsonValue]:
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            names = [name for name in properties if isinstance(name, str) and literal_safe(name)]
            required = schema.get("required")
            return {
                "type": "object",
                "properties": {name: self.simplify(properties[name], depth=depth + 1, refs=refs) for name in names},
                "required": [name for name in required if name in names] if isinstance(required, list) else [],
            }
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return {"type": "object", "additionalProperties": self.simplify(extra, depth=depth + 1, refs=refs)}
        if extra is False:
            return {"type": "object", "properties": {}}
        return {"type": "object"}

    def _array(self, schema: Mapping[str, JsonValue], *, depth: int, refs: tuple[str, ...]) -> dict[str, JsonValue]:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(prefix, list) and prefix:
            return {
                "type": "array",
                "prefixItems": [self.simplify(item, depth=depth + 1, refs=refs) for item in prefix],
            }
        if isinstance(items, list) and items:  # the draft-04 tuple form
            return {"type": "array", "prefixItems": [self.simplify(item, depth=depth + 1, refs=refs) for item in items]}
        item_schema = self.simplify(items, depth=depth + 1, refs=refs) if isinstance(items, Mapping) else ANY_VALUE
        return {"type": "array", "items": dict(item_schema), **_small_bounds(schema, "minItems", "maxItems")}

    def _merge(
        self, schema: Mapping[str, JsonValue], parts: list[JsonValue], refs: tuple[str, ...]
    ) -> dict[str, JsonValue]:
        merged: dict[str, JsonValue] = {key: value for key, value in schema.items() if key != "allOf"}
        properties: dict[str, JsonValue] = {}
        required: list[JsonValue] = []
        for part in [schema, *parts]:
            if isinstance(part, Mapping) and isinstance(part.get("$ref"), str) and part["$ref"] not in refs:
                part = self._resolve(str(part["$ref"])) or {}
            if not isinstance(part, Mapping):
                continue
            own = part.get("properties")
            if isinstance(own, Mapping):
                properties.update({name: value for name, value in own.items() if name not in properties})
            names = part.get("required")
            if isinstance(names, list):
                required.extend(name for name in names if name not in required)
            if "type" in part and "type" not in merged:
                merged["type"] = part["type"]
        if properties:
            merged["properties"] = properties
            merged["required"] = required
            merged.setdefault("type", "object")
        return merged

    def _resolve(self, ref: str) -> Mapping[str, JsonValue] | None:
        """The schema a local JSON pointer (``#/...``) names within the root schema, or ``None``."""
        if not ref.startswith("#"):
            return None
        node: JsonValue = dict(self._root)
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            key = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return None
        return node if isinstance(node, Mapping) else None


def literal_safe(value: JsonValue) -> bool:
    """Whether the converter writes ``value`` as a grammar literal correctly: its JSON escapes no quote or backslash."""
    text = json.dumps(value)
    return '\\"' not in text and "\\\\" not in text


def _types_of(schema: Mapping[str, JsonValue]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared] if declared in _TYPES else []
    if isinstance(declared, list):
        return [kind for kind in dict.fromkeys(declared) if isinstance(kind, str) and kind in _TYPES]
    if "properties" in schema or "additionalProperties" in schema:
        return ["object"]
    if "items" in schema or "prefixItems" in schema:
        return ["array"]
    return []


def _small_bounds(schema: Mapping[str, JsonValue], low: str, high: str) -> dict[str, JsonValue]:
    """Keep the repetition bounds the converter can spell out cheaply (both, or neither when they conflict)."""
    bounds: dict[str, JsonValue] = {}
    for key in (low, high):
        value = schema.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_REPEAT:
            bounds[key] = value
    lowest, highest = bounds.get(low), bounds.get(high)
    if isinstance(lowest, int) and isinstance(highest, int) and lowest > highest:
        return {}
    return bounds
