"""jsonschema behind the argument validator: one compiled validator per schema, and its errors worded for a model."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import JsonValue

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator as SchemaValidator

logger = logging.getLogger(__name__)

_SHOWN_ERRORS = 3
_MESSAGE_LIMIT = 160
_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def compiled(schema: Mapping[str, JsonValue]) -> SchemaValidator | None:
    """The validator of ``schema`` (its ``$schema`` dialect, Draft 2020-12 when it names none), or ``None``.

    ``None`` means the schema is not a valid JSON schema (a server's mistake): its tool is then called unchecked, as
    the server is the last judge of its own arguments. Validators are cached by the schema's content.
    """
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return _compile(schema)
    return _cached(key)


@functools.lru_cache(maxsize=512)
def _cached(key: str) -> SchemaValidator | None:
    schema = json.loads(key)
    return _compile(schema) if isinstance(schema, dict) else None


def _compile(schema: Mapping[str, JsonValue]) -> SchemaValidator | None:
    # Imported here: jsonschema costs about 0.1 s, paid by the first tool call rather than by every start.
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for

    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(dict(schema))
    except SchemaError as error:
        logger.warning("A tool's input schema is not valid JSON Schema, its arguments go unchecked: %s", error.message)
        return None
    return cls(dict(schema))


def schema_errors(validator: SchemaValidator, instance: Mapping[str, JsonValue]) -> list[ValidationError]:
    """The errors of ``instance``, most relevant first; none when the schema cannot be applied (an unknown ``$ref``)."""
    from jsonschema.exceptions import relevance
    from referencing.exceptions import Unresolvable

    try:
        errors = list(validator.iter_errors(instance))
    except Unresolvable as error:
        logger.warning("A tool's input schema refers to what it does not hold, its arguments go unchecked: %s", error)
        return []
    return sorted(errors, key=relevance, reverse=True)


def argument_error(tool_name: str, errors: Sequence[ValidationError]) -> ToolArgumentError:
    """One error naming, for the first few problems, the parameter, what was expected and what was sent."""
    sentences: list[str] = []
    parameters: list[str] = []
    for error in errors:
        for parameter, sentence in _describe(tool_name, error):
            if sentence not in sentences:
                sentences.append(sentence)
                parameters.append(parameter)
    shown = sentences[:_SHOWN_ERRORS]
    if len(sentences) > _SHOWN_ERRORS:
        shown.append(f"{len(sentences) - _SHOWN_ERRORS} more problem(s) with the arguments")
    first = parameters[0] if parameters else None
    return ToolArgumentError(". ".join(shown), parameter=first or None)


def _describe(tool_name: str, error: ValidationError) -> list[tuple[str, str]]:
    """(top-level parameter, sentence) for one schema error."""
    location = list(error.absolute_path)
    path = _path(location)
    subject = f"Parameter '{path}' of tool '{tool_name}'"
    top = str(location[0]) if location else ""
    value = error.instance
    expected: object = error.validator_value
    match error.validator:
        case "required":
            present = value if isinstance(value, Mapping) else {}
            missing = [name for name in _listed(expected) if isinstance(name, str) and name not in present]
            if not location:
                return [(name, f"Missing required parameter '{name}' for tool '{tool_name}'") for name in missing]
            return [
                (top, f"Parameter '{_path([*location, name])}' of tool '{tool_name}' is missing") for name in missing
            ]
        case "type":
            names = [expected] if isinstance(expected, str) else _listed(expected)
            wanted = " or ".join(_TYPE_NAMES.get(str(name), str(name)) for name in names)
            return [(top, f"{subject} must be {wanted}; got {describe_value(value)}")]
        case "enum":
            options = ", ".join(str(option) for option in _listed(expected))
            return [(top, f"{subject} must be one of: {options}; got {describe_value(value)}")]
        case "const":
            return [(top, f"{subject} must be {json.dumps(expected)}; got {describe_value(value)}")]
        case "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum":
            bound = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "greater than"}.get(
                error.validator, "less than"
            )
            return [(top, f"{subject} must be {bound} {expected}; got {value}")]
        case "minLength" | "maxLength":
            bound = "at least" if error.validator == "minLength" else "at most"
            return [(top, f"{subject} must be {bound} {expected} characters long; got {describe_value(value)}")]
        case "minItems" | "maxItems":
            bound = "at least" if error.validator == "minItems" else "at most"
            return [(top, f"{subject} must have {bound} {expected} items")]
    detail = error.message if len(error.message) <= _MESSAGE_LIMIT else error.message[: _MESSAGE_LIMIT - 3] + "..."
    if not location:
        return [("", f"The arguments of tool '{tool_name}' are not valid: {detail}")]
    return [(top, f"{subject} is not valid: {detail}")]


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _path(location: Sequence[str | int]) -> str:
    """``hours[1]``, ``filter.name``: a parameter's place in the arguments, as the model wrote it."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location).lstrip(".")


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
