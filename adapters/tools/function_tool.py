"""The ``@tool`` decorator: a plain function (sync or async) as a Tool, its schema from type hints and docstring."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Generic, ParamSpec, TypeVar, overload

import pydantic
import pydantic_core
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind

from ironhive.adapters.tools.arguments import describe_value, snake_case
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.ports.chat import JsonValue, ToolSpec

P = ParamSpec("P")
R = TypeVar("R")

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SECTION = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|Returns?|Yields?|Raises|"
    r"Examples?|Notes?|Attributes|Todo|See Also|Warnings?|References)\s*:\s*",
    re.IGNORECASE,
)
_ARG_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
_ARG_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")
_SHOWN_ERRORS = 3


class FunctionTool(Generic[P, R]):
    """A Python function exposed to the model as a tool (build it with ``tool``/``@tool``).

    Calling the object calls the function unchanged; ``invoke`` is what the agent uses: it validates and coerces the
    model's arguments with pydantic, runs the function (a sync one in a worker thread, so the event loop stays free)
    and turns its return value into text.

    Args:
        fn: The function. Its parameters need names the model can send (no ``*args``/``**kwargs``).
        name: The tool's name; defaults to the function's ``__name__``.
        description: What the model reads about the tool; defaults to the docstring's text before its sections.

    Raises:
        TypeError: The function has ``*args``/``**kwargs``, a parameter type pydantic cannot build from JSON, or no
            usable name (a lambda or ``functools.partial`` needs ``name=``).
    """

    def __init__(self, fn: Callable[P, R], *, name: str | None = None, description: str | None = None) -> None:
        self._fn = fn
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        if not _TOOL_NAME.fullmatch(tool_name):
            raise TypeError(
                f"Tool name {tool_name!r} is not usable: providers accept 1-64 letters, digits, '_' or '-'. "
                "Pass name=... to tool()."
            )
        summary, parameter_docs = parse_docstring(inspect.getdoc(fn))
        self._signature = inspect.signature(fn)
        self._model = _arguments_model(fn, tool_name, self._signature, parameter_docs)
        self._defaulted = frozenset(
            parameter.name
            for parameter in self._signature.parameters.values()
            if parameter.default is not parameter.empty
        )
        self._spec = ToolSpec(
            name=tool_name,
            description=description if description is not None else summary,
            parameters=_parameters_schema(self._model),
        )
        self._is_async = inspect.iscoroutinefunction(fn)
        functools.update_wrapper(self, fn, updated=())

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema, as the model sees them."""
        return self._spec

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function itself, as if it were not a tool."""
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self._spec.name!r})"

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Validate and coerce the model's arguments, run the function and return its result as text.

        Args:
            arguments: The arguments the model sent, parsed from JSON.

        Returns:
            A ``str`` result as it is, anything else as JSON.

        Raises:
            ToolArgumentError: The arguments do not fit the parameters (the message names the parameter).
            ToolError: The function raised; the message names the exception.
        """
        values = self._validate(arguments)
        args: list[object] = []
        kwargs: dict[str, object] = {}
        for parameter in self._signature.parameters.values():
            if parameter.kind is parameter.POSITIONAL_ONLY:
                args.append(values[parameter.name])
            else:
                kwargs[parameter.name] = values[parameter.name]
        function: Callable[..., object] = self._fn
        try:
            if self._is_async:
                result = await typing.cast(Callable[..., typing.Awaitable[object]], function)(*args, **kwargs)
            else:
                result = await asyncio.to_thread(function, *args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except ToolError:
            raise
        except Exception as error:
            detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            raise ToolError(f"{self._spec.name} failed: {detail}") from error
        return result_text(result)

    def _validate(self, arguments: Mapping[str, JsonValue] | None) -> dict[str, object]:
        """The function's arguments by parameter name: validated, coerced, defaults filled in."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(f"Tool '{self._spec.name}' expects its arguments as a JSON object")
        parameters = self._signature.parameters
        sent: dict[str, JsonValue] = {}
        for key, value in arguments.items():
            name = key if key in parameters else snake_case(key)
            if name not in parameters or (name in sent and key != name):
                continue
            if value is None and name in self._defaulted:
                continue  # null reads as "not sent", as for the built-in tools
            sent[name] = value
        try:
            model = self._model.model_validate(sent)
        except pydantic.ValidationError as error:
            raise _argument_error(self._spec.name, error) from error
        return {name: getattr(model, _field_name(index)) for index, name in enumerate(parameters)}


@overload
def tool(fn: Callable[P, R], /, *, name: str | None = None, description: str | None = None) -> FunctionTool[P, R]: ...


@overload
def tool(
    fn: None = None, /, *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None, /, *, name: str | None = None, description: str | None = None
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a tool of a plain function: ``@tool``, ``@tool(name=...)`` or ``tool(fn, name=..., description=...)``.

    The parameters' JSON schema comes from the type hints (anything pydantic validates: ``int``, ``Literal``,
    ``list[str]``, dataclasses, models, ``Annotated[int, Field(ge=1, description=...)]``) and their descriptions from
    the docstring's ``Args:`` section unless ``Annotated`` gives one. Before each call the model's arguments are
    validated and coerced (``"3"`` → ``3``); what does not fit raises ``ToolArgumentError`` naming the parameter, which
    the agent turns into a recovery directive for the model. ``null`` for a parameter with a default means "not
    sent". An exception from the function reaches the model as a ``ToolError``; a non-``str`` result is sent as JSON.

    Example:
        ```python
        @tool
        def weather(city: str, days: int = 1) -> str:
            \"\"\"Current weather in a city.

            Args:
                city: The city's name.
                days: How many days to forecast.
            \"\"\"
            return f"Sunny in {city}"
        ```

    Args:
        fn: The function (sync or async).
        name: The tool's name; defaults to the function's name.
        description: The tool's description; defaults to the docstring's text before its sections.

    Returns:
        A ``FunctionTool`` (still callable as the function), or a decorator making one when ``fn`` is omitted.
    """
    if fn is not None:
        return FunctionTool(fn, name=name, description=description)

    def decorate(function: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(function, name=name, description=description)

    return decorate


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and the descriptions of its ``Args:`` entries.

    Args:
        doc: The cleaned docstring (``inspect.getdoc``), or ``None``.

    Returns:
        The text before the first section, and each documented parameter's description (lines joined).
    """
    if not doc:
        return "", {}
    lines = doc.splitlines()
    description: list[str] = []
    parameters: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if indent == 0 and (header := _SECTION.fullmatch(stripped)):
            section = header.group(1).lower()
            entry_indent = None
            current = None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARG_SECTIONS or not stripped:
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent <= entry_indent and (entry := _ARG_ENTRY.fullmatch(stripped)):
            current = entry.group(1)
            parameters[current] = entry.group(2).strip()
        elif current is not None and indent > entry_indent:
            parameters[current] = f"{parameters[current]} {stripped}".strip()
    return "\n".join(description).strip(), parameters


def result_text(result: object) -> str:
    """A tool function's return value as the text the model reads: a ``str`` as is, anything else as JSON."""
    if isinstance(result, str):
        return result
    try:
        return pydantic_core.to_json(result, fallback=str).decode()
    except (pydantic_core.PydanticSerializationError, UnicodeDecodeError, ValueError):
        return str(result)


class _QuietJsonSchema(GenerateJsonSchema):
    """Leaves out defaults that are not JSON without a warning: the function applies them, the model need not."""

    ignored_warning_kinds: set[JsonSchemaWarningKind] = {"skipped-choice", "non-serializable-default"}  # noqa: RUF012


def _field_name(index: int) -> str:
    # Fields have neutral names and the parameter's name as alias: a parameter may be called ``json``, ``schema`` or
    # ``_x``, which pydantic refuses or warns about as field names.
    return f"p{index}"


def _arguments_model(
    fn: Callable[..., object], tool_name: str, signature: inspect.Signature, docs: Mapping[str, str]
) -> type[pydantic.BaseModel]:
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:
        raise TypeError(f"The type hints of tool '{tool_name}' cannot be resolved: {error}") from error
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(
                f"Tool '{tool_name}' cannot take *{parameter.name} or **{parameter.name}: give every parameter a name"
            )
        annotation = hints.get(parameter.name, Any)
        field = pydantic.Field(alias=parameter.name)
        if (doc := docs.get(parameter.name)) and not _described(annotation, parameter.default):
            field = pydantic.Field(alias=parameter.name, description=doc)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[_field_name(index)] = (Annotated[annotation, field], default)
    try:
        return pydantic.create_model(
            f"{tool_name}_arguments",
            __config__=pydantic.ConfigDict(extra="ignore", coerce_numbers_to_str=True),
            **fields,
        )
    except pydantic.PydanticUserError as error:
        raise TypeError(f"The parameters of tool '{tool_name}' cannot be read from JSON: {error}") from error


def _described(annotation: object, default: object) -> bool:
    """Whether an ``Annotated[..., Field(description=...)]`` or a ``Field`` default already describes a parameter."""
    metadata = typing.get_args(annotation)[1:] if typing.get_origin(annotation) is Annotated else ()
    return any(isinstance(item, FieldInfo) and item.description for item in (*metadata, default))


def _parameters_schema(model: type[pydantic.BaseModel]) -> dict[str, JsonValue]:
    schema = _without_titles(model.model_json_schema(schema_generator=_QuietJsonSchema))
    assert isinstance(schema, dict)
    result: dict[str, JsonValue] = {
        "type": "object",
        "properties": schema.get("properties", {}),
        "required": schema.get("required", []),
        "additionalProperties": False,
    }
    if "$defs" in schema:
        result["$defs"] = schema["$defs"]
    return result


def _without_titles(schema: JsonValue) -> JsonValue:
    """Drop pydantic's ``title`` keywords (noise to the model); literal values (defaults, enums) stay untouched."""
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, JsonValue] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
            cleaned[key] = {name: _without_titles(item) for name, item in value.items()}
        elif key in ("default", "const", "enum", "examples"):
            cleaned[key] = value
        else:
            cleaned[key] = _without_titles(value)
    return cleaned


def _argument_error(tool_name: str, error: pydantic.ValidationError) -> ToolArgumentError:
    details = error.errors(include_url=False)
    sentences = [_describe(tool_name, detail) for detail in details[:_SHOWN_ERRORS]]
    if len(details) > _SHOWN_ERRORS:
        sentences.append(f"{len(details) - _SHOWN_ERRORS} more parameter(s) do not fit either")
    first = details[0]["loc"] if details else ()
    return ToolArgumentError(". ".join(sentences), parameter=str(first[0]) if first else None)


def _describe(tool_name: str, detail: pydantic_core.ErrorDetails) -> str:
    location = detail["loc"]
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location).lstrip(".")
    if detail["type"] == "missing":
        if len(location) == 1:
            return f"Missing required parameter '{path}' for tool '{tool_name}'"
        return f"Parameter '{path}' of tool '{tool_name}' is missing"
    return (
        f"Parameter '{path}' of tool '{tool_name}' is not valid: {detail['msg']}; got {describe_value(detail['input'])}"
    )
