"""Reduction of a tool's JSON Schema to the OpenAPI subset that Gemini's function declarations accept."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypeAlias

from ironhive.ports.chat import JsonValue

# Gemini's ``FunctionDeclaration.parameters`` is a subset of the OpenAPI 3.0 Schema object, and the API answers
# 400 INVALID_ARGUMENT to keywords outside it: ``additionalProperties``, ``$schema``, ``$ref``/``$defs``, ``const``,
# ``oneOf``/``allOf``, ``exclusiveMinimum``, ``examples``, type arrays, formats other than the few below, and arrays
# without ``items``. Tool schemas (ours and MCP servers') use all of those, so every schema is rebuilt from the
# keywords Gemini knows, rewriting what has an equivalent (type arrays → ``nullable``, ``const`` → ``enum``, ``$ref``
# inlined, ``oneOf`` → ``anyOf``, ``allOf`` merged, ``default`` into the description) and leaving out the rest.

Schema: TypeAlias = dict[str, JsonValue]

_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
_FORMATS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"enum", "date-time"}),
    "integer": frozenset({"int32", "int64"}),
    "number": frozenset({"float", "double"}),
}
_INTEGER_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_NUMBER_KEYWORDS = ("minimum", "maximum")
_MAX_DEPTH = 32
# Gemini insists on ``items`` for every array; a schema that leaves them open gets the most permissive scalar.
_DEFAULT_ITEMS: Schema = {"type": "string"}


def to_gemini_schema(schema: Mapping[str, JsonValue]) -> Schema | None:
    """Rewrite a JSON Schema of a tool's parameters into the subset Gemini accepts.

    Args:
        schema: The tool's JSON Schema (an ``object`` schema).

    Returns:
        The rewritten schema, or ``None`` when the tool takes no parameters: Gemini rejects an ``object`` schema
        with empty ``properties``, and a declaration without parameters means the same.
    """
    rewritten = _Rewriter(schema).node(schema, depth=0, refs=frozenset())
    if not rewritten.get("properties"):
        return None
    # Gemini wants an object at the root, whatever else the schema said.
    rewritten.pop("anyOf", None)
    return {**rewritten, "type": "object"}


class _Rewriter:
    def __init__(self, root: Mapping[str, JsonValue]) -> None:
        self._definitions: dict[str, JsonValue] = {}
        for key in ("$defs", "definitions"):
            found = root.get(key)
            if isinstance(found, Mapping):
                self._definitions.update({f"#/{key}/{name}": value for name, value in found.items()})

    def node(self, schema: object, *, depth: int, refs: frozenset[str]) -> Schema:
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return {}
        reference = schema.get("$ref")
        if isinstance(reference, str):
            target = self._definitions.get(reference)
            if reference in refs or not isinstance(target, Mapping):
                # A recursive or unresolvable reference cannot be inlined; an open object is the honest rest.
                stated = schema.get("description") or (
                    target.get("description") if isinstance(target, Mapping) else None
                )
                return _with_description({"type": "object"}, stated)
            merged = {**target, **{key: value for key, value in schema.items() if key != "$ref"}}
            return self.node(merged, depth=depth + 1, refs=refs | {reference})
        out: Schema = {}
        self._type(schema, out)
        self._annotations(schema, out)
        self._nested(schema, out, depth=depth, refs=refs)
        self._alternatives(schema, out, depth=depth, refs=refs)
        all_of = schema.get("allOf")
        for part in all_of if isinstance(all_of, list) else ():
            _merge(out, self.node(part, depth=depth + 1, refs=refs))
        if "type" not in out and "anyOf" not in out:
            out["type"] = _inferred_type(out)
        return out

    def _type(self, schema: Mapping[str, JsonValue], out: Schema) -> None:
        declared = schema.get("type")
        names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
        known = [name for name in names if isinstance(name, str) and name in _TYPES]
        concrete = [name for name in known if name != "null"]
        if ("null" in known and concrete) or schema.get("nullable") is True:
            out["nullable"] = True
        if len(concrete) == 1:
            out["type"] = concrete[0]
        elif len(concrete) > 1:
            out["anyOf"] = [{"type": name} for name in concrete]
        elif known:
            out["type"] = "null"

    def _annotations(self, schema: Mapping[str, JsonValue], out: Schema) -> None:
        description = schema.get("description")
        if isinstance(description, str) and description:
            out["description"] = description
        if "default" in schema:
            default = json.dumps(schema["default"], ensure_ascii=False)
            stated = out.get("description")
            out["description"] = f"{stated} (default: {default})" if stated else f"Default: {default}."
        values = schema.get("enum")
        if "const" in schema:
            values = [schema["const"]]
        if isinstance(values, list) and values:
            if all(isinstance(value, str) for value in values):
                out["enum"] = list(values)
            else:
                # Gemini's enum holds strings only; the allowed values still reach the model in words.
                allowed = ", ".join(json.dumps(value, ensure_ascii=False) for value in values)
                out["description"] = f"{out.get('description', '')} (one of: {allowed})".strip()
        form = schema.get("format")
        kind = out.get("type")
        if isinstance(form, str) and isinstance(kind, str):
            if form in _FORMATS.get(kind, frozenset()):
                out["format"] = form
            elif kind == "string":  # Gemini rejects other formats; the model may still heed one in words
                stated = out.get("description")
                out["description"] = f"{stated} (format: {form})" if stated else f"Format: {form}."
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            out["pattern"] = pattern
        for key in _INTEGER_KEYWORDS:
            value = schema.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                out[key] = value
        for key in _NUMBER_KEYWORDS:
            value = schema.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value

    def _nested(self, schema: Mapping[str, JsonValue], out: Schema, *, depth: int, refs: frozenset[str]) -> None:
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            rewritten = {name: self.node(sub, depth=depth + 1, refs=refs) for name, sub in properties.items()}
            out["properties"] = dict(rewritten)
            required = schema.get("required")
            if isinstance(required, list):
                kept: list[JsonValue] = [name for name in required if isinstance(name, str) and name in rewritten]
                if kept:
                    out["required"] = kept
            ordering = schema.get("propertyOrdering")
            if isinstance(ordering, list) and all(isinstance(name, str) for name in ordering):
                out["propertyOrdering"] = list(ordering)
        items = schema.get("items")
        if isinstance(items, list):
            items = items[0] if items else None  # tuple typing has no equivalent; the first shape is the best guess
        if isinstance(items, Mapping):
            out["items"] = self.node(items, depth=depth + 1, refs=refs) or dict(_DEFAULT_ITEMS)
        elif out.get("type") == "array":
            out["items"] = dict(_DEFAULT_ITEMS)

    def _alternatives(self, schema: Mapping[str, JsonValue], out: Schema, *, depth: int, refs: frozenset[str]) -> None:
        branches: list[JsonValue] = []
        for key in ("anyOf", "oneOf"):
            listed = schema.get(key)
            if isinstance(listed, list):
                branches.extend(listed)
        if not branches:
            return
        rewritten = [self.node(branch, depth=depth + 1, refs=refs) for branch in branches]
        concrete = [branch for branch in rewritten if branch.get("type") != "null" and branch]
        if len(concrete) < len(rewritten):
            out["nullable"] = True
        if len(concrete) == 1:
            _merge(out, concrete[0])
        elif concrete:
            out["anyOf"] = list(concrete)


def _inferred_type(out: Schema) -> str:
    """The type a schema without one implies: Gemini wants a type on every schema that is not an ``anyOf``."""
    if "properties" in out:
        return "object"
    if "items" in out or "minItems" in out or "maxItems" in out:
        return "array"
    if "minimum" in out or "maximum" in out:
        return "number"
    # Enums, string keywords, and schemas that allow anything: a string is the most permissive scalar Gemini has.
    return "string"


def _merge(out: Schema, extra: Schema) -> None:
    for key, value in extra.items():
        current = out.get(key)
        if key == "properties" and isinstance(current, dict) and isinstance(value, dict):
            current.update(value)
        elif key == "required" and isinstance(current, list) and isinstance(value, list):
            current.extend(name for name in value if name not in current)
        elif key not in out:
            out[key] = value


def _with_description(out: Schema, description: JsonValue) -> Schema:
    if isinstance(description, str) and description:
        out["description"] = description
    return out


__all__ = ["to_gemini_schema"]
