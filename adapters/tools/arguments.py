"""The one argument validator of the built-in tools: checks a call's arguments against the tool's JSON schema."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence

from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import JsonValue

JsonSchema = Mapping[str, JsonValue]

_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
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


def validate_arguments(tool_name: str, schema: JsonSchema, arguments: Mapping[str, JsonValue] | None) -> Arguments:
    """Check a call's arguments against a tool's parameter schema, coercing what models commonly get slightly wrong.

    Supported schema keywords: ``required``, ``type`` (string, integer, number, boolean, array, object), ``enum``,
    ``minimum`` and ``default``. Harmless coercions: ``"12"`` for an integer, ``"true"``/``"false"`` for a boolean, a
    number for a string, an enum value in the wrong case, ``null`` for "not sent", and a camelCase name
    (``startLine``) for a snake_case parameter (``start_line``). Parameters the schema does not know are dropped.

    Args:
        tool_name: The tool's name, used in messages.
        schema: The tool's ``object`` schema.
        arguments: The arguments the model sent (``None`` is read as no arguments).

    Returns:
        The validated, coerced arguments with defaults filled in.

    Raises:
        ToolArgumentError: A required parameter is missing, or a value has the wrong type or is out of range. The
            message contains ``required parameter 'X'`` for a missing one and names the expected type for a wrong
            one.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f"Tool '{tool_name}' expects its arguments as a JSON object")
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    sent = _by_parameter_name(arguments, properties)

    result: dict[str, JsonValue] = {}
    for name, prop in properties.items():
        prop_schema: Mapping[str, JsonValue] = prop if isinstance(prop, Mapping) else {}
        value = sent.get(name)
        if value is None:
            if "default" in prop_schema:
                result[name] = prop_schema["default"]
            continue
        result[name] = _check_value(tool_name, name, prop_schema, value)

    required = schema.get("required")
    for needed in required if isinstance(required, list) else []:
        if isinstance(needed, str) and needed not in result:
            raise ToolArgumentError(
                f"Missing required parameter '{needed}' for tool '{tool_name}'. Call it again with '{needed}' set.",
                parameter=needed,
            )
    return Arguments(result)


def _by_parameter_name(arguments: Mapping[str, JsonValue], properties: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """Key the sent arguments by schema parameter name, accepting camelCase spellings of snake_case names."""
    sent: dict[str, JsonValue] = {}
    for key, value in arguments.items():
        name = key if key in properties else snake_case(key)
        if name in properties and (sent.get(name) is None or key == name):
            sent[name] = value
    return sent


def snake_case(name: str) -> str:
    """The snake_case spelling of a camelCase name (``startLine`` → ``start_line``)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _check_value(tool_name: str, name: str, schema: Mapping[str, JsonValue], value: JsonValue) -> JsonValue:
    expected = schema.get("type")
    if isinstance(expected, str):
        value = _coerce(tool_name, name, expected, value)
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        wanted = value.strip().lower() if isinstance(value, str) else None
        match = [option for option in enum if isinstance(option, str) and option.lower() == wanted]
        if not match:
            options = ", ".join(str(option) for option in enum)
            raise ToolArgumentError(
                f"Parameter '{name}' of tool '{tool_name}' must be one of: {options}; got {describe_value(value)}",
                parameter=name,
            )
        value = match[0]
    minimum = schema.get("minimum")
    if (
        isinstance(minimum, int | float)
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and value < minimum
    ):
        raise ToolArgumentError(
            f"Parameter '{name}' of tool '{tool_name}' must be at least {minimum}; got {value}", parameter=name
        )
    return value


def _coerce(tool_name: str, name: str, expected: str, value: JsonValue) -> JsonValue:
    """Return ``value`` as the JSON type ``expected``, or raise naming the expected type."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "string":
        if isinstance(value, str):
            return value
        if is_number:
            return str(value)
    elif expected == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
            return int(value.strip())
    elif expected == "number":
        if is_number:
            return value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                pass
            else:
                if math.isfinite(number):
                    return int(number) if _INTEGER_TEXT.fullmatch(value.strip()) else number
    elif expected == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif expected == "array":
        if isinstance(value, list):
            return value
    elif expected == "object":
        if isinstance(value, dict):
            return value
    else:
        return value
    raise ToolArgumentError(
        f"Parameter '{name}' of tool '{tool_name}' must be {_TYPE_NAMES.get(expected, expected)}; "
        f"got {describe_value(value)}",
        parameter=name,
    )


def describe_value(value: object) -> str:
    """Describe a wrong value briefly, without echoing a long payload back to the model."""
    match value:
        case None:
            return "null"
        case bool():
            return f"boolean {str(value).lower()}"
        case int() | float():
            return f"number {value}"
        case str():
            shown = value if len(value) <= 40 else value[:37] + "..."
            return f"string {shown!r}"
        case list():
            return "an array"
        case dict():
            return "an object"
        case _:
            return type(value).__name__
