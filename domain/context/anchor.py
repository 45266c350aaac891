"""Anchored compaction state: the "[CONVERSATION STATE]" block kept across compactions (inventory §C.3, §D.9)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ironhive.domain.context.goal import shorten
from ironhive.ports.chat import ChatMessage, JsonValue, Role, ToolCallPart, ToolResultPart

STATE_START = "[CONVERSATION STATE]"
STATE_END = "[END STATE]"
MAX_GOAL_CHARS = 200

# Write/edit/create/delete tools, ours and the original's names, compared without case and underscores.
_MODIFYING_TOOLS = frozenset({"writefile", "editfile", "createfile", "deletefile"})
_PATH_KEYS = ("path", "file_path", "filePath", "filename", "file")
_ERROR_CODE = re.compile(r"\b(?:CS|CA|IDE|SA)\d{4}\b")
_DECISION = re.compile(r"\b(?:I(?:'ll| will)|decided|decide to|chose|choosing|going to|plan to|instead of)\b", re.I)
_MAX_ITEM_CHARS = 160


@dataclass(kw_only=True, slots=True)
class AnchorState:
    """What the conversation has established, oldest items first in every list.

    Attributes:
        goal: The latest user request (at most 200 chars).
        files_modified: Paths written, edited, created or deleted.
        decisions: Assistant statements of intent or choice.
        errors: Compiler and analyzer error codes seen in tool results.
        failed_approaches: Tool calls that failed, with the first line of their error.
        completed_steps: Tool calls that succeeded.
    """

    goal: str = ""
    files_modified: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed_approaches: list[str] = field(default_factory=list)
    completed_steps: list[str] = field(default_factory=list)

    def merge(self, *others: AnchorState) -> AnchorState:
        """Return the union of this state and ``others`` (first occurrence order); the last goal given wins."""
        states = (self, *others)
        return AnchorState(
            goal=next((state.goal for state in reversed(states) if state.goal), ""),
            files_modified=_union(state.files_modified for state in states),
            decisions=_union(state.decisions for state in states),
            errors=_union(state.errors for state in states),
            failed_approaches=_union(state.failed_approaches for state in states),
            completed_steps=_union(state.completed_steps for state in states),
        )

    def render(self, max_chars: int) -> str:
        """The state block, at most ``max_chars`` long (≤ 0 = unlimited).

        Over the cap the oldest items go first, category by category: completed steps, then errors, modified files and
        decisions; failed approaches last, because repeating a failed approach wastes the most.
        """
        lists = {
            "completed_steps": self.completed_steps,
            "errors": self.errors,
            "files_modified": self.files_modified,
            "decisions": self.decisions,
            "failed_approaches": self.failed_approaches,
        }
        goal = self.goal
        if max_chars <= 0:
            return _render(goal, lists)
        # Lengths are tracked arithmetically: re-rendering after every dropped item is quadratic in a long session.
        sizes = {name: _Size(name, items) for name, items in lists.items()}
        fixed = len(STATE_START) + 1 + len(STATE_END) + (len("Goal: ") + len(goal) + 1 if goal else 0)
        total = fixed + sum(size.length for size in sizes.values())
        for size in sizes.values():
            while total > max_chars and size.kept:
                total -= size.drop_oldest()
        kept = {name: size.items[len(size.items) - size.kept :] for name, size in sizes.items()}
        if total > max_chars and goal:
            room = len(goal) - (total - max_chars)
            goal = shorten(goal, room) if room > 3 else ""
        text = _render(goal, kept)
        return text if len(text) <= max_chars else text[:max_chars]


_INLINE = {"files_modified": "Files modified: ", "errors": "Errors: "}
_TITLES = {
    "decisions": "Key decisions:",
    "failed_approaches": "Failed approaches:",
    "completed_steps": "Completed steps:",
}


class _Size:
    """The rendered length of one category while its oldest items are dropped."""

    def __init__(self, name: str, items: list[str]) -> None:
        self.items = items
        self.kept = len(items)
        self._inline = name in _INLINE
        self._header = len(_INLINE[name]) if self._inline else len(_TITLES[name]) + 1
        # Inline items are joined by ", "; listed items are "- item" lines.
        self._per_item = 2 if self._inline else 3
        self._chars = sum(len(item) for item in items)

    @property
    def length(self) -> int:
        if not self.kept:
            return 0
        extra = -2 + 1 if self._inline else 0  # one separator fewer than items, plus the line's newline
        return self._header + self._chars + self._per_item * self.kept + extra

    def drop_oldest(self) -> int:
        before = self.length
        self._chars -= len(self.items[len(self.items) - self.kept])
        self.kept -= 1
        return before - self.length


def _render(goal: str, lists: Mapping[str, list[str]]) -> str:
    lines = [STATE_START]
    if goal:
        lines.append(f"Goal: {goal}")
    if lists["files_modified"]:
        lines.append(_INLINE["files_modified"] + ", ".join(lists["files_modified"]))
    for name in ("decisions", "failed_approaches"):
        if lists[name]:
            lines.append(_TITLES[name])
            lines.extend(f"- {item}" for item in lists[name])
    if lists["errors"]:
        lines.append(_INLINE["errors"] + ", ".join(lists["errors"]))
    if lists["completed_steps"]:
        lines.append(_TITLES["completed_steps"])
        lines.extend(f"- {item}" for item in lists["completed_steps"])
    lines.append(STATE_END)
    return "\n".join(lines)


def _union(lists: Iterable[list[str]]) -> list[str]:
    return list(dict.fromkeys(item for items in lists for item in items))


def extract_state(messages: Iterable[ChatMessage], *, goal: str | None = None) -> AnchorState:
    """Collect the state that ``messages`` establish.

    Args:
        messages: The messages compaction removes, oldest first.
        goal: The current user request.

    Returns:
        The state found in them.
    """
    state = AnchorState(goal=shorten(" ".join(goal.split()), MAX_GOAL_CHARS) if goal else "")
    calls: dict[str, ToolCallPart] = {}
    for message in messages:
        if message.role is Role.ASSISTANT:
            for call in message.tool_calls:
                calls[call.call_id] = call
                path = _modified_path(call)
                if path is not None:
                    state.files_modified.append(path)
            state.decisions.extend(_decisions(message.text))
        elif message.role is Role.TOOL:
            for result in message.tool_results:
                _record_result(state, result, calls.get(result.call_id))
    return AnchorState().merge(state)


def _record_result(state: AnchorState, result: ToolResultPart, call: ToolCallPart | None) -> None:
    step = f"{result.name}({_short_arguments(call)})"
    if result.success is False:
        first_line = next((line.strip() for line in result.result.splitlines() if line.strip()), "failed")
        state.failed_approaches.append(shorten(f"{step}: {first_line}", _MAX_ITEM_CHARS))
        # Error codes live near the start of a compiler's output; the scan stays cheap on huge results.
        state.errors.extend(_ERROR_CODE.findall(result.result[:20000]))
    elif result.success:
        state.completed_steps.append(shorten(step, _MAX_ITEM_CHARS))


def _modified_path(call: ToolCallPart) -> str | None:
    if call.name.replace("_", "").lower() not in _MODIFYING_TOOLS or call.arguments is None:
        return None
    return next((value for key in _PATH_KEYS if isinstance(value := call.arguments.get(key), str)), None)


def _short_arguments(call: ToolCallPart | None) -> str:
    if call is None:
        return ""
    arguments: Mapping[str, JsonValue] = call.arguments or {}
    shown = ", ".join(f"{key}={_brief(value)}" for key, value in arguments.items())
    return shorten(shown, 100)


def _brief(value: JsonValue) -> str:
    text = value if isinstance(value, str) else repr(value)
    return shorten(" ".join(text.split()), 40)


def _decisions(text: str) -> list[str]:
    found = [shorten(line.strip(), _MAX_ITEM_CHARS) for line in text.splitlines() if _DECISION.search(line)]
    return found[:3]
