"""Turn-stream wire protocol: pydantic models of requests and events, their JSON-lines codec and type registry.

Self-contained on purpose (stdlib + pydantic only) so that clients can use it without the rest of ironhive.

Wire rules: one compact JSON object per line, snake_case names, ``type`` first, then the fields in declaration order.
Null fields are written, except those a model lists in ``wire_omit_when_null`` (``user_message.options``,
``hitl_response.id``/``modified_arguments``, the optional ``hitl_request`` fields and every unset ``TurnOptions`` field,
so a ``user_message`` without options keeps the pre-options byte form) and ``wire_omit_when_false``
(``hitl_response.always_approve``). Reading accepts ``type`` anywhere, ignores unknown properties, matches names
case-sensitively and never coerces (``"yes"`` is not a bool; only a whole number written as ``512.0`` reads as an
integer); any unreadable line raises :class:`UnreadableLineError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic_core import from_json

TOOL_OUTPUT_LIMIT_BYTES = 8192
"""Most UTF-8 bytes a ``tool_end.output`` may hold (marker included), as the protocol documents."""

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
"""Longest line (UTF-8 bytes) a reader accepts unless told otherwise."""

_SURROGATES = re.compile("[\ud800-\udfff]")
_MESSAGE_LIMIT = 200


def _integral(value: object) -> object:
    # JSON has one number type: many writers put 512.0 for a whole number, and it must read as the integer 512.
    return int(value) if isinstance(value, float) and value.is_integer() else value


WireInt = Annotated[int, BeforeValidator(_integral)]
"""An integer field: a JSON integer, or a number with no fractional part (``512.0``); never a string or a bool."""

Count = Annotated[WireInt, Field(ge=0)]


class UnreadableLineError(ValueError):
    """A line that is not a readable protocol object; the message is short and fit to show to the peer."""


class WireModel(BaseModel):
    """Base of every protocol model: immutable, strict (nothing is coerced), unknown properties ignored.

    Attributes:
        wire_omit_when_null: Fields left out of the JSON when they are null (all others are written as null).
        wire_omit_when_false: Fields left out of the JSON when they are false.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    wire_omit_when_null: ClassVar[frozenset[str]] = frozenset()
    wire_omit_when_false: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _wire_form(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        out: dict[str, Any] = {"type": data.pop("type")} if "type" in data else {}
        for name, value in data.items():
            if (value is None and name in self.wire_omit_when_null) or (
                value is False and name in self.wire_omit_when_false
            ):
                continue
            out[name] = value
        return out


# --- requests (client → agent) ---------------------------------------------------------------------------------------


class ServerRequest(WireModel):
    """Base of the requests a client sends; a subclass fixes ``type`` with ``Literal["<name>"] = "<name>"``."""

    type: str


class TurnOptions(WireModel):
    """Per-turn overrides carried by a ``user_message``; unset fields keep the agent's configuration.

    Values stay plain strings here; the agent validates tool names, modes and efforts against itself.
    """

    wire_omit_when_null: ClassVar[frozenset[str]] = frozenset(
        {"tool_names", "tool_mode", "reasoning_effort", "temperature", "max_output_tokens"}
    )

    tool_names: list[str] | None = None
    tool_mode: str | None = None
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_output_tokens: WireInt | None = None


class UserMessageRequest(ServerRequest):
    """A user turn: ``content``, an optional model override and optional per-turn options."""

    wire_omit_when_null: ClassVar[frozenset[str]] = frozenset({"options"})

    type: Literal["user_message"] = "user_message"
    content: str
    model: str | None = None
    options: TurnOptions | None = None


class ContextUpdateRequest(ServerRequest):
    """The client's working path (prefixed to later messages) and selected items."""

    type: Literal["context_update"] = "context_update"
    working_path: str | None = None
    selected_items: list[str] | None = None


class HitlResponseRequest(ServerRequest):
    """The answer to a ``hitl_request``; without ``id`` it answers the only pending request."""

    wire_omit_when_null: ClassVar[frozenset[str]] = frozenset({"id", "modified_arguments"})
    wire_omit_when_false: ClassVar[frozenset[str]] = frozenset({"always_approve"})

    type: Literal["hitl_response"] = "hitl_response"
    approved: bool
    reason: str | None = None
    id: str | None = None
    modified_arguments: dict[str, JsonValue] | None = None
    always_approve: bool = False


class CancelRequest(ServerRequest):
    """Cancels the running turn (ignored when idle)."""

    type: Literal["cancel"] = "cancel"


class ShutdownRequest(ServerRequest):
    """Stops reading; turns already received still finish."""

    type: Literal["shutdown"] = "shutdown"


# --- events (agent → client) -----------------------------------------------------------------------------------------


class ServerEvent(WireModel):
    """Base of the events the agent sends; a subclass fixes ``type`` with ``Literal["<name>"] = "<name>"``."""

    type: str


class SessionStartedEvent(ServerEvent):
    """First line of a server session."""

    type: Literal["session_started"] = "session_started"
    session_id: str


class TextDeltaEvent(ServerEvent):
    """A piece of the model's answer."""

    type: Literal["text_delta"] = "text_delta"
    content: str


class ThinkingDeltaEvent(ServerEvent):
    """A piece of reasoning text (its own stream, never folded into ``text_delta``)."""

    type: Literal["thinking_delta"] = "thinking_delta"
    content: str


class AddendumEvent(ServerEvent):
    """A turn observer's note, at most once per turn, never stored in history."""

    type: Literal["addendum"] = "addendum"
    content: str


class ToolStartEvent(ServerEvent):
    """A complete tool call is about to run; ``input`` is written even when null."""

    type: Literal["tool_start"] = "tool_start"
    tool: str
    input: JsonValue = None
    call_id: str | None = None


def cap_tool_output(text: str, limit: int = TOOL_OUTPUT_LIMIT_BYTES) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes, marker included, never inside a character.

    Args:
        text: The tool's output.
        limit: Byte budget of the result (the marker counts towards it).

    Returns:
        ``text`` unchanged when it fits, else its head plus ``"\\n[... output truncated: N of M bytes shown]"``.
        Capping is idempotent: a capped text fits and is returned as is.
    """
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    keep = max(0, limit - len(_truncation_marker(limit, len(raw))))
    while keep > 0 and raw[keep] & 0xC0 == 0x80:  # continuation byte: step back to a character start
        keep -= 1
    return raw[:keep].decode("utf-8", "surrogatepass") + _truncation_marker(keep, len(raw))


def _truncation_marker(kept: int, total: int) -> str:
    return f"\n[... output truncated: {kept} of {total} bytes shown]"


class ToolEndEvent(ServerEvent):
    """A tool call's outcome; a refused call has ``success=False`` and the refusal text as ``output``.

    ``output`` is capped to :data:`TOOL_OUTPUT_LIMIT_BYTES` on construction (see :func:`cap_tool_output`).
    """

    type: Literal["tool_end"] = "tool_end"
    tool: str
    success: bool
    output: str | None = None
    call_id: str | None = None

    @field_validator("output")
    @classmethod
    def _cap_output(cls, value: str | None) -> str | None:
        return None if value is None else cap_tool_output(value)


class HitlRequestEvent(ServerEvent):
    """A tool call waiting for the client's approval; answer with ``hitl_response``.

    ``scope`` is what ``always_approve`` would cover (``execute_command: echo *``); null when "always" is not available
    for this call (it is then asked every time).
    """

    wire_omit_when_null: ClassVar[frozenset[str]] = frozenset({"tool_name", "arguments", "call_id", "level", "scope"})

    type: Literal["hitl_request"] = "hitl_request"
    id: str
    action: str
    target: str
    description: str
    tool_name: str | None = None
    arguments: dict[str, JsonValue] | None = None
    call_id: str | None = None
    level: str | None = None
    scope: str | None = None


class TurnEndEvent(ServerEvent):
    """Closes every turn; token counts are sums over the turn's model calls, null when unreported.

    ``finish_reason`` is written only when the answer was cut short (``length``: the output token limit,
    ``repetition``: stopped for repeating itself, ``content_filter``); a turn that ended normally leaves it out.
    ``cached_input_tokens`` (the part of ``input_tokens`` read from the provider's prompt cache) and
    ``reasoning_tokens`` (the part of ``output_tokens`` spent on reasoning) are written only when the provider
    reported them.
    """

    type: Literal["turn_end"] = "turn_end"
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    total_tokens: Count | None = None
    finish_reason: str | None = None
    cached_input_tokens: Count | None = None
    reasoning_tokens: Count | None = None

    wire_omit_when_null: ClassVar[frozenset[str]] = frozenset(
        {"finish_reason", "cached_input_tokens", "reasoning_tokens"}
    )

    @classmethod
    def from_counts(
        cls,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        *,
        finish_reason: str | None = None,
        cached_input_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ) -> TurnEndEvent:
        """Build a ``turn_end`` whose ``total_tokens`` is input + output (null only when both are null).

        Args:
            input_tokens: Summed prompt tokens, or None when no usage was reported.
            output_tokens: Summed completion tokens (reasoning included), or None when no usage was reported.
            finish_reason: Why the answer was cut short, or None when it ended normally.
            cached_input_tokens: The part of ``input_tokens`` read from the prompt cache, or None when unreported.
            reasoning_tokens: The part of ``output_tokens`` spent on reasoning, or None when unreported.

        Returns:
            The event.
        """
        both_unknown = input_tokens is None and output_tokens is None
        total = None if both_unknown else (input_tokens or 0) + (output_tokens or 0)
        return cls(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=total,
            finish_reason=finish_reason,
            cached_input_tokens=cached_input_tokens,
            reasoning_tokens=reasoning_tokens,
        )


class ErrorEvent(ServerEvent):
    """A failure the client should show; the turn still ends with ``turn_end``."""

    type: Literal["error"] = "error"
    message: str


class TurnRestartedEvent(ServerEvent):
    """The turn ``turn_id`` starts again from its beginning: the worker running it stopped before it ended.

    Only ``ironhive serve`` on Redis writes it (``run --server`` never does): the events of the turn written before it
    belong to an attempt that did not finish, and the turn's one ``turn_end`` is still to come.
    """

    type: Literal["turn_restarted"] = "turn_restarted"
    turn_id: str


class FallbackEvent(ServerEvent):
    """A provider retry / switch / exhaustion notice (declared by the protocol; sent out of band)."""

    type: Literal["fallback"] = "fallback"
    kind: Literal["retry", "fallback", "exhausted"]
    provider_index: Count
    total_providers: Count
    category: str
    message: str
    attempt: Count = 0
    max_attempts: Count = 0


class AgentSelectedEvent(ServerEvent):
    """Reserved: never emitted, clients must not wait for it."""

    type: Literal["agent_selected"] = "agent_selected"
    agent_name: str
    confidence: float


class PlanCreatedEvent(ServerEvent):
    """Reserved: never emitted, clients must not wait for it."""

    type: Literal["plan_created"] = "plan_created"
    plan_id: str
    step_count: Count
    step_descriptions: list[str]


class PlanStepStartedEvent(ServerEvent):
    """Reserved: never emitted, clients must not wait for it."""

    type: Literal["plan_step_started"] = "plan_step_started"
    plan_id: str
    step_index: Count
    description: str


class PlanStepCompletedEvent(ServerEvent):
    """Reserved: never emitted, clients must not wait for it."""

    type: Literal["plan_step_completed"] = "plan_step_completed"
    plan_id: str
    step_index: Count
    success: bool
    summary: str


class PlanCompletedEvent(ServerEvent):
    """Reserved: never emitted, clients must not wait for it."""

    type: Literal["plan_completed"] = "plan_completed"
    plan_id: str
    success: bool
    summary: str


class ContextCompactedEvent(ServerEvent):
    """ironhive's own notice that the history was compacted (clients may ignore it); unknown counts are null.

    ``parts_cut`` counts the texts (the user's message included), tool results and call arguments shortened in the
    request, and ``chars_cut`` the characters cut from them (net of the markers left in their place).
    """

    type: Literal["context_compacted"] = "context_compacted"
    tokens_before: Count | None = None
    tokens_after: Count | None = None
    messages_summarized: Count | None = None
    messages_dropped: Count | None = None
    summary_used: bool = False
    parts_cut: Count = 0
    chars_cut: Count = 0


class UnknownEvent(ServerEvent):
    """An event this version cannot read as its model, kept whole so a client can skip it instead of failing.

    :meth:`ProtocolRegistry.parse_event` returns it for an unregistered ``type`` and for a known ``type`` carrying a
    value this version does not know in a closed set (a new ``fallback.kind``); its other properties are in
    ``model_extra``, in their order, and it serializes back to the same object.
    """

    model_config = ConfigDict(extra="allow")

    type: str


# --- codec and registry ----------------------------------------------------------------------------------------------

_Tagged = TypeVar("_Tagged", ServerRequest, ServerEvent)


class ProtocolRegistry:
    """The request and event types of one protocol, keyed by ``type``, with the line reader and writer.

    Immutable: :meth:`with_request` / :meth:`with_event` return a new registry with one more (or a replaced) type,
    leaving the original and the base models untouched.

    Args:
        requests: Request classes (subclasses of :class:`ServerRequest` with a literal ``type``).
        events: Event classes (subclasses of :class:`ServerEvent` with a literal ``type``).
        max_line_bytes: Longest line, in UTF-8 bytes, the readers accept.

    Raises:
        TypeError: A class is not a request/event model with a single literal ``type`` default.
        ValueError: ``max_line_bytes`` is not positive.
    """

    __slots__ = ("_events", "_requests", "max_line_bytes")

    def __init__(
        self,
        requests: Iterable[type[ServerRequest]] = (),
        events: Iterable[type[ServerEvent]] = (),
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        self._requests: Mapping[str, type[ServerRequest]] = MappingProxyType(_by_tag(requests, ServerRequest))
        self._events: Mapping[str, type[ServerEvent]] = MappingProxyType(_by_tag(events, ServerEvent))
        self.max_line_bytes = max_line_bytes

    @property
    def requests(self) -> Mapping[str, type[ServerRequest]]:
        """The request classes by ``type`` value."""
        return self._requests

    @property
    def events(self) -> Mapping[str, type[ServerEvent]]:
        """The event classes by ``type`` value."""
        return self._events

    def with_request(self, cls: type[ServerRequest]) -> ProtocolRegistry:
        """Return a registry that also reads and writes ``cls`` (replacing a class with the same ``type``)."""
        return ProtocolRegistry(
            [*self._requests.values(), cls], self._events.values(), max_line_bytes=self.max_line_bytes
        )

    def with_event(self, cls: type[ServerEvent]) -> ProtocolRegistry:
        """Return a registry that also reads and writes ``cls`` (replacing a class with the same ``type``)."""
        return ProtocolRegistry(
            self._requests.values(), [*self._events.values(), cls], max_line_bytes=self.max_line_bytes
        )

    def with_max_line_bytes(self, max_line_bytes: int) -> ProtocolRegistry:
        """Return the same registry with another line length limit."""
        return ProtocolRegistry(self._requests.values(), self._events.values(), max_line_bytes=max_line_bytes)

    def parse_request(self, line: str | bytes) -> ServerRequest:
        """Read one request line (text, or bytes decoded as strict UTF-8).

        Raises:
            UnreadableLineError: The line is not a well-formed request of a registered type.
        """
        return _validate(self._load(line), self._requests, "request")

    def parse_event(self, line: str | bytes) -> ServerEvent:
        """Read one event line (text, or bytes decoded as strict UTF-8).

        Forward compatible: an event of a type this registry does not know, or of a known type with an unknown value
        in a closed set (``fallback.kind``), is returned as :class:`UnknownEvent` rather than refused.

        Raises:
            UnreadableLineError: The line is not a JSON object with a string ``type``, or a known event is malformed.
        """
        value = self._load(line)
        tag = value.get("type")
        if isinstance(tag, str) and tag not in self._events:
            return UnknownEvent.model_validate(value)
        try:
            return _validate(value, self._events, "event")
        except _NewVariantError:
            return UnknownEvent.model_validate(value)

    def serialize_request(self, request: ServerRequest) -> str:
        """Write a request as one compact JSON line (no trailing newline).

        Raises:
            ValueError: The request's class is not registered here (the peer could not read it).
        """
        return _dump(request, self._requests, "request")

    def serialize_event(self, event: ServerEvent) -> str:
        """Write an event as one compact JSON line (no trailing newline).

        Raises:
            ValueError: The event's class is not registered here (the peer could not read it).
        """
        return _dump(event, self._events, "event")

    def _load(self, line: str | bytes) -> dict[str, Any]:
        # Cheap length check first so a huge line is refused before it is encoded or decoded.
        if len(line) > self.max_line_bytes:
            raise UnreadableLineError(f"line too long (more than {self.max_line_bytes} bytes)")
        try:
            if isinstance(line, str):
                data = line.encode("utf-8")  # fails on lone surrogates
            else:
                data = bytes(line)
                data.decode("utf-8")
        except UnicodeError:
            raise UnreadableLineError("line is not valid UTF-8 text") from None
        if len(data) > self.max_line_bytes:
            raise UnreadableLineError(f"line too long ({len(data)} bytes; the limit is {self.max_line_bytes})")
        try:
            value = from_json(data, allow_inf_nan=False)
        except (ValueError, RecursionError) as exc:
            raise UnreadableLineError(_shorten(f"invalid JSON: {exc}")) from None
        if not isinstance(value, dict):
            raise UnreadableLineError(f"expected a JSON object, got {_json_kind(value)}")
        return value


def _by_tag(classes: Iterable[type[_Tagged]], base: type[_Tagged]) -> dict[str, type[_Tagged]]:
    table: dict[str, type[_Tagged]] = {}
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, base)) or cls is base:
            raise TypeError(f"{cls!r} is not a subclass of {base.__name__}")
        field = cls.model_fields.get("type")
        tag = field.default if field is not None else None
        if field is None or not isinstance(tag, str) or get_args(field.annotation) != (tag,):
            raise TypeError(f'{cls.__name__} needs a field `type: Literal["<name>"] = "<name>"`')
        table[tag] = cls
    return table


def _validate(value: dict[str, Any], table: Mapping[str, type[_Tagged]], kind: str) -> _Tagged:
    if "type" not in value:
        raise UnreadableLineError(f'{kind} has no "type"')
    tag = value["type"]
    if not isinstance(tag, str):
        raise UnreadableLineError(f'{kind} "type" must be a string, got {_json_kind(tag)}')
    cls = table.get(tag)
    if cls is None:
        raise UnreadableLineError(_shorten(f"unknown {kind} type {tag!r}"))
    try:
        return cls.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        if errors and all(error["type"] == "literal_error" and error["loc"] != ("type",) for error in errors):
            raise _NewVariantError(_describe(tag, exc)) from None
        raise UnreadableLineError(_describe(tag, exc)) from None


class _NewVariantError(UnreadableLineError):
    """Only a closed-set value is unknown: a newer peer's variant (an event reader keeps it as UnknownEvent)."""


def _describe(tag: str, exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    if not errors:
        return _shorten(f"{tag}: invalid")
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    text = f"{tag}.{where}: {first['msg']}" if where else f"{tag}: {first['msg']}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return _shorten(text)


def _dump(model: _Tagged, table: Mapping[str, type[_Tagged]], kind: str) -> str:
    registered = table.get(model.type)
    if not isinstance(model, UnknownEvent) and (registered is None or not isinstance(model, registered)):
        raise ValueError(f"{kind} type {model.type!r} ({type(model).__name__}) is not registered in this protocol")
    line = json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Python strings may hold lone surrogates (e.g. from surrogateescape'd tool output); UTF-8 cannot carry them.
    return _SURROGATES.sub("\ufffd", line)


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _shorten(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


DEFAULT_PROTOCOL = ProtocolRegistry(
    requests=(UserMessageRequest, ContextUpdateRequest, HitlResponseRequest, CancelRequest, ShutdownRequest),
    events=(
        SessionStartedEvent,
        TextDeltaEvent,
        ThinkingDeltaEvent,
        AddendumEvent,
        ToolStartEvent,
        ToolEndEvent,
        HitlRequestEvent,
        TurnEndEvent,
        ErrorEvent,
        FallbackEvent,
        AgentSelectedEvent,
        PlanCreatedEvent,
        PlanStepStartedEvent,
        PlanStepCompletedEvent,
        PlanCompletedEvent,
        ContextCompactedEvent,
        TurnRestartedEvent,
    ),
)
"""The built-in protocol: every request and event type ironhive speaks."""


def parse_request(line: str | bytes) -> ServerRequest:
    """Read one request line with :data:`DEFAULT_PROTOCOL` (see :meth:`ProtocolRegistry.parse_request`)."""
    return DEFAULT_PROTOCOL.parse_request(line)


def parse_event(line: str | bytes) -> ServerEvent:
    """Read one event line with :data:`DEFAULT_PROTOCOL` (see :meth:`ProtocolRegistry.parse_event`)."""
    return DEFAULT_PROTOCOL.parse_event(line)


def serialize_request(request: ServerRequest) -> str:
    """Write one request line with :data:`DEFAULT_PROTOCOL` (see :meth:`ProtocolRegistry.serialize_request`)."""
    return DEFAULT_PROTOCOL.serialize_request(request)


def serialize_event(event: ServerEvent) -> str:
    """Write one event line with :data:`DEFAULT_PROTOCOL` (see :meth:`ProtocolRegistry.serialize_event`)."""
    return DEFAULT_PROTOCOL.serialize_event(event)
