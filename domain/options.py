"""Per-turn option merge and the tool-round caps of the loop (chatBehavior)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ironhive.ports.chat import ChatOptions


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatBehavior:
    """Caps on the tool-call rounds of one request (the ``chatBehavior`` config section).

    Attributes:
        maximum_iterations_per_request: Tool rounds allowed in one turn before the model must answer in text.
        maximum_consecutive_errors_per_request: Rounds in a row whose calls all failed before the turn stops.
    """

    maximum_iterations_per_request: int = 10
    maximum_consecutive_errors_per_request: int = 3

    def __post_init__(self) -> None:
        if self.maximum_iterations_per_request < 1:
            raise ValueError("maximum_iterations_per_request must be at least 1")
        if self.maximum_consecutive_errors_per_request < 1:
            raise ValueError("maximum_consecutive_errors_per_request must be at least 1")


def merge_options(base: ChatOptions, override: ChatOptions | None) -> ChatOptions:
    """Merge a turn's override onto the configured options, field by field.

    A field set in ``override`` (not ``None``) replaces the configured value; an unset field keeps it. Nothing is
    remembered: the next turn starts from ``base`` again.

    Args:
        base: The agent's configured options.
        override: This turn's options, or ``None`` for none.

    Returns:
        The options of this turn.
    """
    if override is None:
        return base
    changes = {field.name: value for field in fields(override) if (value := getattr(override, field.name)) is not None}
    return replace(base, **changes) if changes else base
