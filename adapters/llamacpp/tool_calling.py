"""Tool calling for local models: the JSON reply format, its schema and llama.cpp grammar, and the prompt naming it.

Local models get no native tool-calling API. When tools are offered, the model is told about them in the system prompt
and must reply with exactly one JSON object, held to that shape by a llama.cpp grammar built from a JSON schema:

- ``{"tool": "<name>", "arguments": {...}}`` calls a tool; ``anyOf`` over the tools ties each name to its own
  parameter schema (simplified as :mod:`ironhive.adapters.llamacpp.grammar_schema` explains);
- ``{"answer": "<text>"}`` answers without a call (left out for ``require_any`` and ``require:<tool>``).

Earlier rounds are shown to the model in the same format (see ``to_llama_messages(..., json_turns=True)``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

from ironhive.adapters.llamacpp.grammar_schema import grammar_schema, literal_safe
from ironhive.adapters.llamacpp.mapping import LlamaMessage
from ironhive.domain.errors import ConfigurationError, ProviderError
from ironhive.ports.chat import ChatOptions, JsonValue, ToolSpec

TOOL_KEY: Final = "tool"
ARGUMENTS_KEY: Final = "arguments"
ANSWER_KEY: Final = "answer"

_FREE_OBJECT: Final[dict[str, JsonValue]] = {"type": "object"}
# Converter failures surface as these; anything else is a bug worth seeing.
_CONVERTER_ERRORS: Final = (AssertionError, ValueError, KeyError, TypeError, IndexError, RecursionError)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolPlan:
    """How one call uses tools.

    Attributes:
        tools: The tools the model may call: every offered tool, or the one ``require:<tool>`` names.
        allow_answer: Whether the model may answer without calling a tool (``auto``).
    """

    tools: tuple[ToolSpec, ...]
    allow_answer: bool

    def spec(self, name: str) -> ToolSpec | None:
        """The callable tool called ``name``, if there is one."""
        return next((tool for tool in self.tools if tool.name == name), None)

    def for_small_model(self) -> ToolPlan:
        """The plan without the built-in tools a small model cannot use well (see ``SMALL_MODEL_SKIPS``).

        A plan with one tool (``require:<tool>``) is kept whole, and so is a plan that would lose every tool.
        """
        kept = tuple(tool for tool in self.tools if tool.name not in SMALL_MODEL_SKIPS)
        return self if len(self.tools) == 1 or not kept else ToolPlan(tools=kept, allow_answer=self.allow_answer)


SMALL_MODEL_SKIPS: Final = frozenset({"edit_file", "manage_todo", "glob_files"})
"""Built-in tools left out for a small model: an exact-text edit and a todo list are beyond a model of a few hundred
million parameters (write_file and grep_files serve instead), and every tool listed costs prompt tokens and grammar
work on each generated token."""


def plan_tools(options: ChatOptions) -> ToolPlan | None:
    """Decide how a call uses tools, from its options.

    Args:
        options: The call's options (``tools`` and ``tool_mode``; an unset mode is ``auto``).

    Returns:
        The plan, or ``None`` when no tools are offered or ``tool_mode`` is ``none`` (the model answers in free text).

    Raises:
        ConfigurationError: The tool mode is unknown, or ``require:<tool>`` names a tool that is not offered.
    """
    by_name: dict[str, ToolSpec] = {}
    for tool in options.tools or ():
        by_name.setdefault(tool.name, tool)
    offered = tuple(by_name.values())
    mode = options.tool_mode or "auto"
    if mode == "none" or not offered:
        if mode not in ("auto", "none", "require_any") and not mode.startswith("require:"):
            raise ConfigurationError(_unknown_mode(mode))
        return None
    if mode == "auto":
        return ToolPlan(tools=offered, allow_answer=True)
    if mode == "require_any":
        return ToolPlan(tools=offered, allow_answer=False)
    name = mode.removeprefix("require:").strip()
    if mode.startswith("require:") and name:
        required = next((tool for tool in offered if tool.name == name), None)
        if required is None:
            raise ConfigurationError(f"tool_mode {mode!r} requires the tool {name!r}, which is not offered")
        return ToolPlan(tools=(required,), allow_answer=False)
    raise ConfigurationError(_unknown_mode(mode))


def _unknown_mode(mode: str) -> str:
    return f"unknown tool mode {mode!r}; expected auto, none, require_any or require:<tool>"


def response_schema(plan: ToolPlan) -> dict[str, JsonValue]:
    """The JSON schema every reply must match under ``plan``.

    Returns:
        An ``anyOf`` of one ``{"tool", "arguments"}`` object per callable tool, plus ``{"answer"}`` when answering is
        allowed (a single alternative is returned as it is).
    """
    return _alternatives(plan, {tool.name: grammar_schema(tool.parameters) for tool in plan.tools})


def _alternatives(plan: ToolPlan, arguments: Mapping[str, dict[str, JsonValue]]) -> dict[str, JsonValue]:
    choices: list[JsonValue] = [
        {
            "type": "object",
            "properties": {TOOL_KEY: _name_schema(tool.name), ARGUMENTS_KEY: arguments[tool.name]},
            "required": [TOOL_KEY, ARGUMENTS_KEY],
        }
        for tool in plan.tools
    ]
    if plan.allow_answer:
        # An empty answer says nothing; the grammar asks for at least one character.
        answer: dict[str, JsonValue] = {"type": "string", "minLength": 1}
        choices.append({"type": "object", "properties": {ANSWER_KEY: answer}, "required": [ANSWER_KEY]})
    if len(choices) == 1 and isinstance(choices[0], dict):
        return choices[0]
    return {"anyOf": choices}


def _name_schema(name: str) -> dict[str, JsonValue]:
    # A name the converter cannot spell as a literal is left open; the parser then rejects any other name.
    return {"const": name} if literal_safe(name) else {"type": "string"}


def response_grammar(plan: ToolPlan) -> str:
    """The llama.cpp grammar (GBNF) that holds the model to :func:`response_schema`.

    A tool whose simplified schema the converter still rejects gets free-form object arguments rather than breaking
    every call; its arguments are validated after generation all the same.

    Raises:
        ConfigurationError: llama-cpp-python is not installed.
        ProviderError: No grammar could be built even so.
    """
    try:
        return _gbnf(json.dumps(response_schema(plan)))
    except _CONVERTER_ERRORS:
        pass
    arguments: dict[str, dict[str, JsonValue]] = {}
    for tool in plan.tools:
        schema = grammar_schema(tool.parameters)
        try:
            _gbnf(json.dumps(schema))
        except _CONVERTER_ERRORS:
            schema = dict(_FREE_OBJECT)
        arguments[tool.name] = schema
    try:
        return _gbnf(json.dumps(_alternatives(plan, arguments)))
    except _CONVERTER_ERRORS as exc:
        raise ProviderError(f"Could not build the tool-call grammar: {type(exc).__name__}: {exc}") from exc


@functools.lru_cache(maxsize=32)
def _gbnf(schema_json: str) -> str:
    return str(_converter()(schema_json))


_CONVERTER_MODULE: Final = "_ironhive_llama_grammar"


@functools.cache
def _converter() -> Callable[[str], object]:
    """llama-cpp-python's JSON-schema-to-grammar converter (``llama_cpp.llama_grammar.json_schema_to_gbnf``).

    Importing ``llama_cpp.llama_grammar`` first runs the package's ``__init__``, which loads the native library, numpy
    and jinja2: a few tenths of a second in a process that only wants the grammar's text (the model runs in the
    worker). The converter's module imports nothing but the standard library, so it is loaded from its file alone,
    under a private name; where that fails (another layout), it is imported the usual way.

    Raises:
        ConfigurationError: llama-cpp-python is not installed.
    """
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None:
        raise ConfigurationError(_MISSING)
    for folder in spec.submodule_search_locations or ():
        source = Path(folder) / "llama_grammar.py"
        alone = importlib.util.spec_from_file_location(_CONVERTER_MODULE, source)
        if alone is None or alone.loader is None or not source.is_file():
            continue
        module = importlib.util.module_from_spec(alone)
        sys.modules[_CONVERTER_MODULE] = module
        try:
            alone.loader.exec_module(module)
            convert = module.json_schema_to_gbnf
        except Exception:  # not the module this expects: import it the usual way
            sys.modules.pop(_CONVERTER_MODULE, None)
            break
        if callable(convert):
            return cast("Callable[[str], object]", convert)
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except (ImportError, OSError, RuntimeError) as exc:
        raise ConfigurationError(_MISSING) from exc
    return cast("Callable[[str], object]", json_schema_to_gbnf)


_MISSING: Final = 'Local inference needs llama-cpp-python; pip install "ironhive[local]"'


def tool_instructions(plan: ToolPlan, *, compact: bool = False) -> str:
    """The system-prompt text that names the tools and the exact reply format.

    Each callable tool is listed with its description and one line per parameter (type, whether required, default,
    allowed values, description); a parameter with a structured schema (objects, arrays, unions) shows that schema as
    compact JSON. Lines are cheaper for a small model to read than whole schemas, and the grammar enforces the
    structure anyway. ``compact`` (for small models) keeps the first sentence of each description and one line of
    parameter names and types per tool.

    Args:
        plan: The call's tool plan.
        compact: Write the short form.

    Returns:
        The instructions.
    """
    # Worded for small models, tried on the bundled 135M one: placeholders such as "<your answer>" get copied into
    # answers, and saying when to answer (greetings, reports of a tool's result) keeps it from calling tools at random.
    call_format = '{"tool": "<tool name>", "arguments": {...}}'
    if plan.allow_answer:
        rules = [
            "Reply with exactly one JSON object and nothing else.",
            'To talk to the user (a greeting, an answer, or a report of what a tool gave you): {"answer": "..."}',
            f"To call a tool (only when the task needs a file or a command): {call_format}",
        ]
    elif len(plan.tools) == 1:
        only = json.dumps(plan.tools[0].name, ensure_ascii=False)
        rules = [
            f"You must call the tool {plan.tools[0].name}. Reply with exactly one JSON object and nothing else:",
            f'{{"tool": {only}, "arguments": {{...}}}}',
        ]
    else:
        rules = ["You must call one of the tools. Reply with exactly one JSON object and nothing else:", call_format]
    listing = ["", "Tools:"]
    for tool in plan.tools:
        if compact:
            listing.append(f"- {tool.name}: {_first_sentence(tool.description) or '(no description)'}")
            listing.append(f"  arguments: {_short_parameters(tool.parameters)}")
            continue
        listing.append(f"- {tool.name}: {_one_line(tool.description) or '(no description)'}")
        listing.extend(f"  {line}" for line in _parameter_lines(tool.parameters))
    return "\n".join([*rules, *listing])


def _first_sentence(text: str) -> str:
    line = _one_line(text)
    end = line.find(". ")
    return line if end < 0 else line[: end + 1]


def _short_parameters(schema: Mapping[str, JsonValue]) -> str:
    """``path (string), recursive (boolean, optional)``: names, simple types and what is optional."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return _compact(schema) if schema.get("type") != "object" or len(schema) > 1 else "none"
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    shown = []
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        enum = prop.get("enum") if isinstance(prop, Mapping) else None
        facts = ["|".join(_compact(value) for value in enum)] if isinstance(enum, list) else []
        if not facts:
            facts = [kind if isinstance(kind, str) and kind in _SIMPLE_TYPES else "json"]
        if name not in needed:
            facts.append("optional")
        shown.append(f"{name} ({', '.join(facts)})")
    return ", ".join(shown) or "none"


def _parameter_lines(schema: Mapping[str, JsonValue]) -> list[str]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return [f"arguments: {_compact(schema)}"] if schema.get("type") != "object" or len(schema) > 1 else []
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    lines = []
    for name, prop in properties.items():
        facts: list[str] = []
        description = ""
        if isinstance(prop, Mapping):
            description = _one_line(prop.get("description"))
            kind = prop.get("type")
            enum = prop.get("enum")
            if isinstance(enum, list):
                facts.append("one of " + ", ".join(_compact(value) for value in enum))
            elif isinstance(kind, str) and kind in _SIMPLE_TYPES:
                facts.append(kind)
            else:
                facts.append(_compact({key: value for key, value in prop.items() if key != "description"}))
            if isinstance(prop.get("minimum"), int | float):
                facts.append(f"at least {prop['minimum']}")
            if "default" in prop:
                facts.append(f"default {_compact(prop['default'])}")
        facts.append("required" if name in needed else "optional")
        lines.append(f"{name} ({', '.join(facts)})" + (f": {description}" if description else ""))
    return lines or ["(no arguments)"]


_SIMPLE_TYPES: Final = frozenset({"string", "integer", "number", "boolean"})


def _one_line(text: JsonValue) -> str:
    return " ".join(text.split()) if isinstance(text, str) else ""


def _compact(value: JsonValue | Mapping[str, JsonValue]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def with_tool_instructions(messages: Sequence[LlamaMessage], instructions: str) -> list[LlamaMessage]:
    """Add ``instructions`` to the system prompt: after an existing system message, or as a new first message."""
    rendered = [dict(message) for message in messages]
    if rendered and rendered[0]["role"] == "system":
        rendered[0]["content"] = f"{rendered[0]['content']}\n\n{instructions}"
    else:
        rendered.insert(0, {"role": "system", "content": instructions})
    return rendered
