"""Compaction units: messages grouped so that a tool call and the results answering it always move together."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import Enum

from ironhive.ports.chat import ChatMessage, Role, ToolCallPart


class UnitKind(Enum):
    """What a unit holds."""

    SYSTEM = "system"
    USER = "user"
    EXCHANGE = "exchange"
    """An assistant message with tool calls and the tool messages that follow it."""
    OTHER = "other"
    """An assistant message without calls, or a tool message no call precedes."""


@dataclass(kw_only=True, slots=True)
class Unit:
    """A run of messages compaction keeps or removes as a whole (mutable only because frozen ones build slower).

    Attributes:
        start: Index of the unit's first message.
        end: Index after its last message.
        kind: What it holds.
        tokens: Token estimate of its messages.
        protected: Whether it calls a tool whose output survives truncating compaction.
    """

    start: int
    end: int
    kind: UnitKind
    tokens: int
    protected: bool = False

    @property
    def size(self) -> int:
        """The number of messages in the unit."""
        return self.end - self.start


def group_units(
    messages: Sequence[ChatMessage], count: Callable[[ChatMessage], int], protected_tools: Collection[str] = ()
) -> list[Unit]:
    """Split ``messages`` into units, in order.

    Tool messages directly after an assistant message with calls belong to it, whatever their call ids: splitting a
    call from its result makes every provider reject the request.

    Args:
        messages: The conversation.
        count: Token estimate of one message.
        protected_tools: Tool names whose exchanges are marked protected.

    Returns:
        The units, covering every message exactly once.
    """
    units: list[Unit] = []
    system, user, assistant, tool = Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL
    index = 0
    total = len(messages)
    while index < total:
        message = messages[index]
        role = message.role
        if role is assistant and _has_calls(message):
            end = index + 1
            tokens = count(message)
            while end < total and messages[end].role is tool:
                tokens += count(messages[end])
                end += 1
            protected = bool(protected_tools) and any(call.name in protected_tools for call in message.tool_calls)
            units.append(Unit(start=index, end=end, kind=UnitKind.EXCHANGE, tokens=tokens, protected=protected))
            index = end
            continue
        kind = UnitKind.SYSTEM if role is system else UnitKind.USER if role is user else UnitKind.OTHER
        units.append(Unit(start=index, end=index + 1, kind=kind, tokens=count(message)))
        index += 1
    return units


def _has_calls(message: ChatMessage) -> bool:
    # A plain loop: this runs for every message of every request, and a generator costs more than the check.
    for part in message.parts:  # noqa: SIM110
        if isinstance(part, ToolCallPart):
            return True
    return False
