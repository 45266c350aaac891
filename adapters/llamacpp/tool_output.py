"""Reads a local model's JSON reply (a tool call or an answer), whole and while it streams."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from ironhive.adapters.llamacpp.tool_calling import ANSWER_KEY, ARGUMENTS_KEY, TOOL_KEY, ToolPlan
from ironhive.adapters.tools.arguments import validate_arguments
from ironhive.domain.errors import ToolArgumentError
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import JsonValue, ToolCallPart

_log = logging.getLogger(__name__)

_WHITESPACE: Final = " \t\n\r"
_OPENING: Final = ("ws", "{", "ws", f'"{ANSWER_KEY}"', "ws", ":", "ws", '"')
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_REPLACEMENT: Final = "\ufffd"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallOutput:
    """The model called a tool.

    Attributes:
        call: The call, built by ``make_tool_call``; its arguments are exactly what the model sent.
        argument_error: Why the arguments do not fit the tool's schema, when they do not. The call is passed on
            anyway: the agent loop answers it with a recovery directive the model can act on.
    """

    call: ToolCallPart
    argument_error: str | None = None
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, kw_only=True, slots=True)
class AnswerOutput:
    """The model answered without calling a tool."""

    text: str
    kind: Literal["answer"] = "answer"


@dataclass(frozen=True, kw_only=True, slots=True)
class UnparsedOutput:
    """The reply was not a call or an answer; it is passed on as text.

    Attributes:
        text: The reply as generated.
        reason: What was wrong with it.
    """

    text: str
    reason: str
    kind: Literal["unparsed"] = "unparsed"


ToolOutput: TypeAlias = ToolCallOutput | AnswerOutput | UnparsedOutput


def parse_tool_output(text: str, plan: ToolPlan, id_factory: Callable[[], str]) -> ToolOutput:
    """Read one whole reply made under ``plan``.

    Under the grammar the reply is always a call of a callable tool or an answer, unless generation was cut off by the
    token limit. Anything else is passed on as text rather than dropped: the user then sees what the model produced.

    Args:
        text: The reply.
        plan: The plan it was generated under (which tools may be called, whether answering is allowed).
        id_factory: Makes the call's id.

    Returns:
        The call (with the outcome of validating its arguments), the answer, or the unparsed text with the reason.
    """
    try:
        # strict=False: the grammar lets raw control characters (a newline) into strings, as some models write them.
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        return UnparsedOutput(text=text, reason=f"not JSON ({exc})")
    if not isinstance(value, dict):
        return UnparsedOutput(text=text, reason="not a JSON object")
    if TOOL_KEY in value:
        return _tool_call(text, value, plan, id_factory)
    answer = value.get(ANSWER_KEY)
    if isinstance(answer, str):
        return AnswerOutput(text=answer)
    return UnparsedOutput(text=text, reason=f'neither "{TOOL_KEY}" nor "{ANSWER_KEY}"')


def _tool_call(text: str, value: Mapping[str, JsonValue], plan: ToolPlan, id_factory: Callable[[], str]) -> ToolOutput:
    name = value[TOOL_KEY]
    spec = plan.spec(name) if isinstance(name, str) else None
    if spec is None:
        return UnparsedOutput(text=text, reason=f"{TOOL_KEY} {json.dumps(name)} is not a tool that may be called")
    arguments = value.get(ARGUMENTS_KEY, {})
    call = make_tool_call(id_factory(), spec.name, json.dumps(arguments, ensure_ascii=False))
    error: str | None = None
    if call.arguments is not None:
        try:
            validate_arguments(spec.name, spec.parameters, call.arguments)
        except ToolArgumentError as exc:
            error = str(exc)
    else:
        error = call.parse_error
    if error is not None:
        _log.debug("local model called %s with arguments that do not fit: %s", spec.name, error)
    return ToolCallOutput(call=call, argument_error=error)


class AnswerStream:
    """Pulls the text of ``{"answer": "..."}`` out of a reply while it is generated, unescaping as it goes.

    Feed it the reply's pieces in order; it returns the answer text each piece completes. It stays silent for a reply
    that turns out to be anything else (a tool call), and holds back an escape sequence until it is whole.
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._position = 0
        self._state: Literal["opening", "answer", "done", "other"] = "opening"

    @property
    def started(self) -> bool:
        """Whether the reply is an answer (its string has begun)."""
        return self._state in ("answer", "done")

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply and return the answer text it completes (often ``""``)."""
        if self._state in ("done", "other"):
            return ""
        self._buffer += piece
        if self._state == "opening":
            end = _match_opening(self._buffer)
            if end is False:
                self._state = "other"
                return ""
            if end is None:
                return ""
            self._state, self._position = "answer", end
        return self._decode()

    def _decode(self) -> str:
        out: list[str] = []
        buffer, index = self._buffer, self._position
        while index < len(buffer):
            char = buffer[index]
            if char == '"':
                self._state = "done"
                index += 1
                break
            if char != "\\":
                out.append(char)
                index += 1
                continue
            decoded, used = _escape(buffer, index)
            if used == 0:
                break  # the escape is not complete yet
            out.append(decoded)
            index += used
        self._position = index
        return "".join(out)


def _match_opening(text: str) -> int | Literal[False] | None:
    """Where the answer's string starts in ``text``; ``None`` while undecided, ``False`` when it is no answer."""
    index = 0
    for step in _OPENING:
        if step == "ws":
            while index < len(text) and text[index] in _WHITESPACE:
                index += 1
            continue
        for char in step:
            if index == len(text):
                return None
            if text[index] != char:
                return False
            index += 1
    return index


def _escape(buffer: str, index: int) -> tuple[str, int]:
    """Decode the escape at ``buffer[index]`` (a backslash): its text and length, or length 0 while incomplete."""
    if index + 1 >= len(buffer):
        return "", 0
    kind = buffer[index + 1]
    if kind != "u":
        return _ESCAPES.get(kind, kind), 2
    code = _hex4(buffer, index + 2)
    if code is None:
        return ("", 0) if index + 6 > len(buffer) else (buffer[index + 1], 2)
    if 0xD800 <= code < 0xDC00:  # a high surrogate: JSON spells characters beyond the BMP as a pair
        if not "\\u".startswith(buffer[index + 6 : index + 8]):
            return _REPLACEMENT, 6  # no second escape follows
        if index + 12 > len(buffer):
            return "", 0
        low = _hex4(buffer, index + 8) if buffer[index + 6 : index + 8] == "\\u" else None
        if low is not None and 0xDC00 <= low < 0xE000:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
        return _REPLACEMENT, 6
    if 0xDC00 <= code < 0xE000:
        return _REPLACEMENT, 6  # a lone low surrogate cannot be encoded as UTF-8 downstream
    return chr(code), 6


def _hex4(buffer: str, start: int) -> int | None:
    digits = buffer[start : start + 4]
    if len(digits) < 4 or any(char not in "0123456789abcdefABCDEF" for char in digits):
        return None
    return int(digits, 16)


@dataclass(frozen=True, kw_only=True, slots=True)
class DecodedReply:
    """What a finished reply adds after its streamed answer text.

    Attributes:
        text: Text to emit at the end (a reply that was not parsed), or ``""``.
        tool_calls: The tool call the reply made, if it made one.
    """

    text: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()


class ReplyDecoder:
    """Turns a reply generated under a tool plan into answer text (streamed) and a tool call (at the end).

    Args:
        plan: The call's tool plan.
        id_factory: Makes tool-call ids.
    """

    def __init__(self, plan: ToolPlan, id_factory: Callable[[], str]) -> None:
        self._plan = plan
        self._id_factory = id_factory
        self._answer = AnswerStream()
        self._pieces: list[str] = []

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply; returns answer text to stream now."""
        self._pieces.append(piece)
        return self._answer.feed(piece)

    def finish(self) -> DecodedReply:
        """Read the whole reply once generation has ended.

        An answer was streamed already, whole or (when the token limit cut it off) as far as it got. A tool call
        is returned; any other reply is returned as text, once.
        """
        if self._answer.started:
            return DecodedReply()
        text = "".join(self._pieces)
        match parse_tool_output(text, self._plan, self._id_factory):
            case ToolCallOutput(call=call):
                return DecodedReply(tool_calls=(call,))
            case AnswerOutput(text=answer):
                return DecodedReply(text=answer)
            case UnparsedOutput(reason=reason):
                _log.debug("local model reply passed on as text: %s", reason)
                return DecodedReply(text=text)
