"""Renders a conversation as a plain-text transcript (for a summarising or advising model)."""

from __future__ import annotations

from collections.abc import Sequence

from ironhive.ports.chat import ChatMessage, Role, TextPart, ToolCallPart, ToolResultPart

_LABELS = {Role.SYSTEM: "Agent instructions", Role.USER: "User", Role.ASSISTANT: "Agent", Role.TOOL: "Tool results"}


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... [{len(text) - limit} more characters cut]"


def render_transcript(messages: Sequence[ChatMessage], *, result_limit: int = 2000) -> str:
    """The conversation as labelled sections; tool calls as ``-> calls name(args)``, results as ``<- …`` (cut).

    Args:
        messages: The conversation.
        result_limit: Characters kept of each tool result.

    Returns:
        The transcript text.
    """
    sections: list[str] = []
    for message in messages:
        lines: list[str] = []
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                lines.append(part.text.strip())
            elif isinstance(part, ToolCallPart):
                lines.append(f"-> calls {part.name}({cut(part.arguments_text, result_limit)})")
            elif isinstance(part, ToolResultPart):
                outcome = "" if part.success is not False else " [failed]"
                lines.append(f"<- {part.name}{outcome}: {cut(part.result, result_limit)}")
        if lines:
            sections.append(f"## {_LABELS[message.role]}\n" + "\n".join(lines))
    return "\n\n".join(sections)
