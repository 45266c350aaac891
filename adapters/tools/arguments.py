"""The one argument validator of tools with a JSON schema (built-in and MCP): harmless coercions, then jsonschema."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence

from ironhive.adapters.tools.schema_validation import argument_error, compiled, schema_errors
from ironhive.adapters.tools.schema_validation import describe_value as describe_value
from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import JsonValue

JsonSchema = Mapping[str, JsonValue]

_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def object_schema(properties: Mapping[str, JsonSchema], required: Sequence[str] = ()) -> dict[str, JsonValue]:
    """Build the JSON schema of a tool's parameters.

    Args:
        properties: Each parameter's own schema (``type``, ``description``, optional ``enum``/``minimum``/``default``).
        required: The names of the parameters the model must always send.

    Returns:
        An ``object`` schema that rejects unknown parameters.
    """
    return {
        "type": "object",
        "properties": {name: dict(schema) for name, schema in properties.items()},
        "required": list(required),
        "additionalProperties": False,
    }


class Arguments(Mapping[str, JsonValue]):
    """Arguments that passed validation, with typed accessors.

    Only parameters the model sent (or that have a schema default) are present. The accessors raise ``TypeError`` when
    a tool asks for a type its own schema does not promise: that is a bug in the tool, not a model error.
    """

    def __init__(self, values: Mapping[str, JsonValue]) -> None:
        self._values = dict(values)

    def __getitem__(self, key: str) -> JsonValue:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Arguments({self._values!r})"

    def string(self, name: str) -> str:
        """The value of a required (or defaulted) string parameter."""
        value = self.optional_string(name)
        if value is None:
            raise TypeError(f"parameter {name!r} has no value")
        return value

    def optional_string(self, name: str) -> str | None:
        """The value of a string parameter, or ``None`` when it was not sent."""
        value = self._values.get(name)
        if value is None or isinstance(value, str):
            return value
        raise TypeError(f"parameter {name!r} is not a string")

    def integer(self, name: str) -> int:
        """The value of a required (or defaulted) integer parameter."""
        value = self.optional_integer(name)
        if value is None:
            raise TypeError(f"parameter {name!r} has no value")
        return value

    def optional_integer(self, name: str) -> int | None:
        """The value of an integer parameter, or ``None`` when it was not sent."""
        value = self._values.get(name)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise TypeError(f"parameter {name!r} is not an integer")

    def boolean(self, name: str, default: bool = False) -> bool:
        """The value of a boolean parameter, or ``default`` when it was not sent."""
        value = self._values.get(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        raise TypeError(f"parameter {name!r} is not a boolean")


def validate_arguments(
    tool_name: str,
    schema: JsonSchema,
    arguments: Mapping[str, JsonValue] | None,
    *,
    fill_defaults: bool = True,
) -> Arguments:
    """Check a call's arguments against a tool's JSON schema, coercing what models commonly get slightly wrong.

    The schema is applied by jsonschema (its ``$schema`` dialect, Draft 2020-12 by default), so every keyword counts,
    nested ones included. Before that, harmless slips are mended where the schema says what it wants: ``"12"`` for an
    integer, ``3.0`` for an integer, ``"true"``/``"false"`` for a boolean, a number for a string, an enum value in
    the wrong case (in nested objects and arrays too), ``null`` for a parameter that does not accept it read as "not
    sent", and a camelCase name (``startLine``) for a snake_case parameter (``start_line``). Parameters a closed
    schema (``additionalProperties: false``) does not know are dropped; an open schema passes them on.

    Args:
        tool_name: The tool's name, used in messages.
        schema: The tool's ``object`` schema.
        arguments: The arguments the model sent (``None`` is read as no arguments).
        fill_defaults: Fill in the schema's ``default`` of a parameter that was not sent (the built-in tools read
            them; an MCP server applies its own).

    Returns:
        The validated, coerced arguments.

    Raises:
        ToolArgumentError: The arguments do not fit the schema. The message names each parameter (up to three),
            what it must be and what was sent; ``Missing required parameter 'X'`` for a missing one.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f"Tool '{tool_name}' expects its arguments as a JSON object")
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    closed = schema.get("additionalProperties") is False
    candidate = {
        name: coerce_value(properties.get(name), value)
        for name, value in _by_parameter_name(arguments, properties, closed=closed).items()
    }
    validator = compiled(schema)
    if validator is None:
        return Arguments(candidate)
    errors = schema_errors(validator, candidate)
    # A null the schema refuses means "not sent" (models write null for an optional parameter they leave out).
    unsent = {key for key, value in candidate.items() if value is None and _refused_at(errors, key)}
    if unsent or fill_defaults:
        candidate = {key: value for key, value in candidate.items() if key not in unsent}
        for name, prop in properties.items():
            if fill_defaults and name not in candidate and isinstance(prop, Mapping) and "default" in prop:
                candidate[name] = prop["default"]
        errors = schema_errors(validator, candidate)
    if errors:
        raise argument_error(tool_name, errors)
    return Arguments(candidate)


def _refused_at(errors: Sequence[object], key: str) -> bool:
    return any(list(getattr(error, "absolute_path", ())) == [key] for error in errors)


def _by_parameter_name(
    arguments: Mapping[str, JsonValue], properties: Mapping[str, JsonValue], *, closed: bool
) -> dict[str, JsonValue]:
    """Key the sent arguments by parameter name (camelCase accepted for snake_case); a closed schema drops the rest."""
    sent: dict[str, JsonValue] = {}
    for key, value in arguments.items():
        name = key if key in properties else snake_case(key)
        if name in properties:
            if key == name or name not in sent or sent[name] is None:
                sent[name] = value
        elif not closed:
            sent[key] = value
    return sent


def snake_case(name: str) -> str:
    """The snake_case spelling of a camelCase name (``startLine`` → ``start_line``)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def coerce_value(schema: JsonValue, value: JsonValue) -> JsonValue:
    """``value`` mended towards what ``schema`` asks for where the fix is unambiguous; unchanged otherwise.

    Only the schema's own ``type``, ``enum``, ``properties`` and ``items`` are followed (not ``$ref`` or ``anyOf``):
    what is not mended here is still judged by jsonschema afterwards.
    """
    if not isinstance(schema, Mapping):
        return value
    expected = schema.get("type")
    listed = expected if isinstance(expected, list) else [expected]
    types = [name for name in listed if isinstance(name, str)]
    if types and not any(_is_type(value, name) for name in types):
        for name in types:
            mended = _coerced(name, value)
            if mended is not None:
                value = mended
                break
    elif types == ["integer"] and isinstance(value, float) and value.is_integer():
        value = int(value)  # jsonschema accepts 3.0 as an integer; the tools want 3
    enum = schema.get("enum")
    if isinstance(enum, list) and isinstance(value, str) and value not in enum:
        wanted = value.strip().lower()
        match = [option for option in enum if isinstance(option, str) and option.lower() == wanted]
        if len(match) == 1:
            value = match[0]
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        value = {key: coerce_value(properties.get(key), item) for key, item in value.items()}
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        value = [coerce_value(items, item) for item in value]
    return value


def _is_type(value: JsonValue, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    wanted = _JSON_TYPES.get(name)
    return wanted is None or isinstance(value, wanted)


def _coerced(expected: str, value: JsonValue) -> JsonValue | None:
    """``value`` as the JSON type ``expected``, or ``None`` when no harmless coercion gets there."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    text = value.strip() if isinstance(value, str) else None
    if expected == "string" and is_number:
        return str(value)
    if expected == "integer" and text is not None and _INTEGER_TEXT.fullmatch(text):
        return int(text)
    if expected == "number" and text is not None:
        try:
            number = float(text)
        except ValueError:
            return None
        if math.isfinite(number):
            return int(text) if _INTEGER_TEXT.fullmatch(text) else number
    if expected == "boolean" and text is not None and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return None
