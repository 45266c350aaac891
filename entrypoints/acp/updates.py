"""Maps the agent loop's chunks, stored history and todo list to ACP ``session/update`` payloads (pure, no I/O)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

from acp.helpers import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ConfigOptionUpdate,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from ironhive.acp.editor_writes import FileChange
from ironhive.adapters.server.events import wire_input
from ironhive.domain.turn import TextDelta, ThinkingDelta, ToolCallChunk, ToolCallRecord, ToolResultChunk, TurnRecord
from ironhive.ports.chat import ChatMessage, JsonValue, Role, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
Update = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | ConfigOptionUpdate
)

TODO_TOOL = "manage_todo"
_KINDS: Mapping[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "delete_file": "delete",
    "list_directory": "search",
    "glob_files": "search",
    "grep_files": "search",
    "execute_command": "execute",
    TODO_TOOL: "think",
    "advisor": "think",
    "load_skill": "read",
    "web_search": "fetch",
    "explore_site": "fetch",
    "deep_research": "fetch",
}
_TITLES: Mapping[str, str] = {
    "read_file": "Read {path}",
    "write_file": "Write {path}",
    "edit_file": "Edit {path}",
    "delete_file": "Delete {path}",
    "list_directory": "List {path}",
    "glob_files": "Find {pattern}",
    "grep_files": "Search for {pattern}",
    "execute_command": "Run {command}",
    "web_search": "Search the web for {query}",
    "explore_site": "Explore {url}",
}
_PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "delete_file", "list_directory"})
_PLAN_STATUS: Mapping[str, Literal["pending", "in_progress", "completed"]] = {
    "pending": "pending",
    "blocked": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of a tool (``other`` for MCP and unknown tools)."""
    return _KINDS.get(name, "other")


def tool_title(name: str, arguments: Mapping[str, JsonValue] | None) -> str:
    """A short human title of a call: ``Run echo hi``, ``Read notes.md``; the tool's name when nothing fits."""
    template = _TITLES.get(name)
    if template is None or arguments is None:
        return name
    field = template[template.index("{") + 1 : template.index("}")]
    value = arguments.get(field)
    if not isinstance(value, str) or not value.strip():
        return name
    shown = " ".join(value.split())
    return template.format(**{field: shown if len(shown) <= 80 else shown[:77] + "..."})


def tool_locations(name: str, arguments: Mapping[str, JsonValue] | None, cwd: Path) -> list[ToolCallLocation] | None:
    """The files a call touches, as absolute paths (for the editor's follow-along), or None."""
    if name not in _PATH_TOOLS or arguments is None:
        return None
    path = arguments.get("path")
    if not isinstance(path, str) or not path.strip():
        return None
    line = arguments.get("start_line") if name == "read_file" else None
    return [ToolCallLocation(path=str(cwd / path), line=line if isinstance(line, int) and line > 0 else None)]


def call_started(call: ToolCallPart, cwd: Path) -> ToolCallStart:
    """The ``tool_call`` update of a call the model requested (status pending until it runs)."""
    return start_tool_call(
        call.call_id,
        tool_title(call.name, call.arguments),
        kind=tool_kind(call.name),
        status="pending",
        locations=tool_locations(call.name, call.arguments, cwd),
        raw_input=wire_input(call),
    )


def call_finished(record: ToolCallRecord, change: FileChange | None = None) -> ToolCallProgress:
    """The ``tool_call_update`` of a finished call: completed or failed, its output as text content, and the change
    it made to a file as a diff (editors show it)."""
    content: list[FileEditToolCallContent | ContentToolCallContent] = []
    if change is not None:
        content.append(tool_diff_content(change.path, change.new_text, change.old_text))
    if record.result:
        content.append(tool_content(text_block(record.result)))
    return update_tool_call(
        record.call_id,
        status="completed" if record.success else "failed",
        content=content or None,
        raw_output=record.result,
    )


def chunk_updates(chunk: object, cwd: Path) -> Iterator[Update]:
    """The updates one loop chunk becomes (none for usage, compaction and the like)."""
    match chunk:
        case TextDelta(text=text) if text:
            yield update_agent_message_text(text)
        case ThinkingDelta(text=text) if text:
            yield update_agent_thought_text(text)
        case ToolCallChunk(call=call):
            yield call_started(call, cwd)
        case ToolResultChunk(record=record) if record.success is not None:
            yield call_finished(record)
        case _:
            pass


def stop_reason(turn: TurnRecord, maximum_tool_rounds: int) -> StopReason:
    """Why a finished turn stopped, in ACP's words."""
    if turn.finish_reason in ("length", "repetition"):
        return "max_tokens"
    if turn.finish_reason == "content_filter":
        return "refusal"
    rounds = sum(1 for message in turn.messages if message.role is Role.ASSISTANT and message.tool_calls)
    if maximum_tool_rounds > 0 and rounds >= maximum_tool_rounds:
        return "max_turn_requests"
    return "end_turn"


def history_updates(messages: Sequence[ChatMessage], cwd: Path) -> Iterator[Update]:
    """A stored conversation replayed as updates: user and agent text, thoughts, each call and its result."""
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                if message.role is Role.USER:
                    yield update_user_message_text(part.text)
                elif message.role is Role.ASSISTANT:
                    yield update_agent_message_text(part.text)
            elif isinstance(part, ThinkingPart) and part.text:
                yield update_agent_thought_text(part.text)
            elif isinstance(part, ToolCallPart):
                yield call_started(part, cwd)
            elif isinstance(part, ToolResultPart) and part.success is not None:
                yield call_finished(
                    ToolCallRecord(
                        call_id=part.call_id,
                        name=part.name,
                        arguments_text="",
                        result=part.result,
                        success=part.success,
                    )
                )


def plan_entries(todo_json: str) -> list[PlanEntry] | None:
    """The entries of a ``todo.json`` text as an ACP plan, or None when the text is not a todo list."""
    try:
        data = json.loads(todo_json)
    except ValueError:
        return None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    entries: list[PlanEntry] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("task"), str):
            continue
        priority = item.get("priority")
        entries.append(
            plan_entry(
                item["task"],
                priority=priority if priority in ("high", "medium", "low") else "medium",
                status=_PLAN_STATUS.get(str(item.get("status")), "pending"),
            )
        )
    return entries


def plan_update(todo_file: Path) -> AgentPlanUpdate | None:
    """The plan update after a ``manage_todo`` call: the whole list as it now stands (None when unreadable)."""
    try:
        text = todo_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return update_plan([])
    except OSError:
        return None
    entries = plan_entries(text)
    return None if entries is None else update_plan(entries)


def prompt_text(blocks: Iterable[object]) -> str:
    """The text of an ACP prompt: text blocks, embedded text resources and resource links, in order."""
    pieces: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            pieces.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                uri = getattr(resource, "uri", "")
                pieces.append(f'<context ref="{uri}">\n{text}\n</context>')
        elif kind == "resource_link":
            pieces.append(f"@{getattr(block, 'uri', '')}")
    return "\n".join(piece for piece in pieces if piece)
