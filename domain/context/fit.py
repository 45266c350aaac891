"""Last-resort shrinking: make a request fit its token limit when compaction alone could not.

Compaction keeps every user message, the protected tail and the protected tool outputs, so a request can still be too
big (a pasted log as user message, a huge system prompt, a small local model). Sending it anyway only trades our
deterministic cut for the provider's error, or for a local model silently losing its context; so the promise is that
no prepared request exceeds the window. The cuts are ordered by how little they cost the model: first the longest tool
results and call arguments (the tool can be called again), then the middle of the longest user and assistant texts,
then system texts, then whole old units, and only then everything down to its omission marker.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ironhive.domain.context.tokens import LIST_OVERHEAD, MessageTokenCache, count_message
from ironhive.domain.context.units import UnitKind, group_units
from ironhive.ports.chat import (
    ChatMessage,
    ContentPart,
    JsonValue,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

_RESULT_FLOOR = 400
_TEXT_FLOOR = 300
_SYSTEM_FLOOR = 1000
_PASSES = 3
_ARGUMENT_FLOOR = 200


def omitted_marker(chars: int) -> str:
    """The marker left where ``chars`` characters were cut out."""
    return f"[... {chars} chars omitted to fit the context window ...]"


@dataclass(frozen=True, kw_only=True, slots=True)
class FitResult:
    """The shrunk request.

    Attributes:
        messages: The messages to send.
        parts_cut: Texts, results or arguments that were cut.
        messages_dropped: Messages removed whole.
        chars_cut: Characters the cuts removed, net of the markers left in their place.
    """

    messages: list[ChatMessage]
    parts_cut: int
    messages_dropped: int
    chars_cut: int = 0


class _Request:
    def __init__(self, messages: Sequence[ChatMessage], tokens: MessageTokenCache) -> None:
        self.messages = list(messages)
        self.counter = tokens.counter
        self.counts = [tokens.count(message) for message in self.messages]
        self.total = LIST_OVERHEAD + sum(self.counts)
        self.cut = 0
        self.chars_cut = 0

    def replace_part(self, index: int, position: int, part: ContentPart) -> None:
        message = self.messages[index]
        parts = list(message.parts)
        self.chars_cut += max(0, _length(parts[position]) - _length(part))
        parts[position] = part
        self.messages[index] = replace(message, parts=tuple(parts))
        # Intermediate versions are counted directly: caching them would only evict useful entries.
        count = count_message(self.messages[index], self.counter)
        self.total += count - self.counts[index]
        self.counts[index] = count
        self.cut += 1


def fit_to_limit(messages: Sequence[ChatMessage], *, limit: int, tokens: MessageTokenCache) -> FitResult:
    """Shrink ``messages`` until their estimate is at most ``limit`` tokens (when any shrinking can get there).

    Args:
        messages: The request, oldest first.
        limit: The token limit.
        tokens: The per-message token counts.

    Returns:
        The request, unchanged when it already fits. Only a limit below the overheads of the few messages that are
        never removed (system messages, the first and the latest user request, the last unit) can still be exceeded.
    """
    request = _Request(messages, tokens)
    dropped = 0
    for floor_scale in (1, 0):
        for roles, floor in (
            ((Role.TOOL, Role.ASSISTANT), _RESULT_FLOOR),
            ((Role.USER, Role.ASSISTANT), _TEXT_FLOOR),
            ((Role.SYSTEM,), _SYSTEM_FLOOR),
        ):
            _shrink(request, limit, floor * floor_scale, roles)
        if floor_scale and request.total > limit:
            dropped += _drop_units(request, limit)
        if request.total <= limit:
            break
    return FitResult(
        messages=request.messages, parts_cut=request.cut, messages_dropped=dropped, chars_cut=request.chars_cut
    )


def _shrink(request: _Request, limit: int, floor: int, roles: tuple[Role, ...]) -> None:
    for _ in range(_PASSES):
        if request.total <= limit:
            return
        candidates = sorted(
            ((_length(part), index, position) for index, position, part in _parts(request, roles)),
            reverse=True,
        )
        for length, index, position in candidates:
            excess = request.total - limit
            if excess <= 0:
                return
            if length <= floor:
                break
            part = request.messages[index].parts[position]
            text = _text(part)
            per_token = len(text) / max(1, request.counter.count(text))
            keep = max(floor, length - int(excess * per_token + 0.999) - len(omitted_marker(length)) - 4)
            if keep < length:
                request.replace_part(index, position, _cut_part(part, keep))


def _parts(request: _Request, roles: tuple[Role, ...]) -> Iterator[tuple[int, int, ContentPart]]:
    # The first tier takes tool results and call arguments; the others take written text.
    kinds: tuple[type, ...] = (ToolResultPart, ToolCallPart) if Role.TOOL in roles else (TextPart, ThinkingPart)
    for index, message in enumerate(request.messages):
        if message.role not in roles:
            continue
        for position, part in enumerate(message.parts):
            if isinstance(part, kinds):
                yield index, position, part


def _text(part: ContentPart) -> str:
    if isinstance(part, ToolResultPart):
        return part.result
    if isinstance(part, ToolCallPart):
        return part.arguments_text
    return part.text


def _length(part: ContentPart) -> int:
    return len(_text(part))


def cut_middle(text: str, keep: int) -> str:
    """Keep about ``keep`` chars of ``text`` (two thirds from the start, one from the end) around a marker."""
    tail = keep // 3
    head = keep - tail
    marker = omitted_marker(len(text) - head - tail)
    if len(text) <= keep + len(marker) + 4:
        return text  # the marker would cost more than the cut saves
    return f"{text[:head]}\n\n{marker}\n\n{text[len(text) - tail :]}" if tail else f"{text[:head]}\n\n{marker}"


def _cut_part(part: ContentPart, keep: int) -> ContentPart:
    if isinstance(part, ToolResultPart):
        return replace(part, result=cut_middle(part.result, keep))
    if isinstance(part, ToolCallPart):
        return _cut_arguments(part, keep)
    cut = replace(part, text=cut_middle(part.text, keep))
    # A provider's signature covers the whole reasoning text: a cut block goes back without it.
    return replace(cut, opaque=None) if isinstance(cut, ThinkingPart) and cut.text != part.text else cut


def _cut_arguments(call: ToolCallPart, keep: int) -> ToolCallPart:
    """Shorten a call's arguments, keeping them valid JSON so that every provider still accepts the call."""
    if call.arguments is None:
        return replace(call, arguments_text=cut_middle(call.arguments_text, keep))
    arguments: dict[str, JsonValue] = dict(call.arguments)
    to_remove = len(call.arguments_text) - keep
    for key in sorted(arguments, key=lambda name: _json_length(arguments[name]), reverse=True):
        value = arguments[key]
        length = _json_length(value)
        if to_remove <= 0 or length <= _ARGUMENT_FLOOR:
            break  # short values (paths, flags) are what makes the call readable; they stay
        target = max(_ARGUMENT_FLOOR // 2, length - to_remove)
        shortened: JsonValue = cut_middle(value, target) if isinstance(value, str) else _summary(value, length)
        arguments[key] = shortened
        to_remove -= length - _json_length(shortened)
    return replace(call, arguments=arguments, arguments_text=json.dumps(arguments, ensure_ascii=False))


def _json_length(value: JsonValue) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def _summary(value: JsonValue, length: int) -> JsonValue:
    return value if isinstance(value, int | float | bool) or value is None else omitted_marker(length)


def _drop_units(request: _Request, limit: int) -> int:
    """Remove whole units, oldest first: replies and tool exchanges, then user messages other than the first and
    the latest request. System messages and the last unit stay."""
    units = group_units(request.messages, lambda message: 0)
    counts = request.counts
    non_system = [unit for unit in units if unit.kind is not UnitKind.SYSTEM]
    if len(non_system) <= 1:
        return 0
    users = [unit for unit in non_system if unit.kind is UnitKind.USER]
    kept = {users[0].start, users[-1].start, non_system[-1].start} if users else {non_system[-1].start}
    order = [unit for unit in non_system if unit.kind is not UnitKind.USER and unit.start not in kept]
    order += [unit for unit in users if unit.start not in kept]
    removed: set[int] = set()
    for unit in order:
        if request.total <= limit:
            break
        removed.update(range(unit.start, unit.end))
        request.total -= sum(counts[unit.start : unit.end])
    if removed:
        request.messages = [message for index, message in enumerate(request.messages) if index not in removed]
        request.counts = [count for index, count in enumerate(counts) if index not in removed]
    return len(removed)
