"""Tool-result compaction: big tool results keep their first and last lines around an omission marker."""

from __future__ import annotations

from dataclasses import replace

from ironhive.ports.chat import ChatMessage, ToolResultPart


def cut_tool_result(text: str, *, max_chars: int, head_lines: int, tail_lines: int) -> str:
    """Cut a tool result longer than ``max_chars`` to its head and tail lines (inventory §D.9 step 2).

    Line endings are normalised to ``\\n``. When the result has more than ``head_lines + tail_lines`` lines, the head
    and tail are joined by "[... <N> lines omitted (<M> chars total) ...]" as a paragraph of its own; otherwise the text
    is cut at ``max_chars`` and "[... truncated (<M> chars total) ...]" follows. A line cut that is still longer than
    ``max_chars`` (a few enormous lines, such as minified JSON) falls back to the character cut, so no cut result is
    much longer than the limit.

    Args:
        text: The tool result.
        max_chars: Results up to this length are returned unchanged.
        head_lines: Lines kept from the start.
        tail_lines: Lines kept from the end.

    Returns:
        The result, cut or unchanged.
    """
    if len(text) <= max_chars:
        return text
    total = len(text)
    normalized = text.replace("\r\n", "\n") if "\r" in text else text
    line_count = normalized.count("\n") + 1
    if line_count > head_lines + tail_lines:
        head_end = -1
        for _ in range(head_lines):
            head_end = normalized.find("\n", head_end + 1)
        tail_start = len(normalized)
        for _ in range(tail_lines):
            tail_start = normalized.rfind("\n", 0, tail_start)
        omitted = line_count - head_lines - tail_lines
        pieces = [f"[... {omitted} lines omitted ({total} chars total) ...]"]
        if head_lines:
            pieces.insert(0, normalized[:head_end])
        if tail_lines:
            pieces.append(normalized[tail_start + 1 :])
        cut = "\n\n".join(pieces)
        if len(cut) <= max_chars:
            return cut
    return f"{normalized[:max_chars]}\n\n[... truncated ({total} chars total) ...]"


def cut_message_results(message: ChatMessage, *, max_chars: int, head_lines: int, tail_lines: int) -> ChatMessage:
    """Apply :func:`cut_tool_result` to every tool result of ``message``; the same object when nothing changes."""
    changed = False
    parts = list(message.parts)
    for index, part in enumerate(parts):
        if isinstance(part, ToolResultPart) and len(part.result) > max_chars:
            cut = cut_tool_result(part.result, max_chars=max_chars, head_lines=head_lines, tail_lines=tail_lines)
            parts[index] = replace(part, result=cut)
            changed = True
    return replace(message, parts=tuple(parts)) if changed else message
