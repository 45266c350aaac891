"""The ACP surface's pure parts: chunk and history mapping, stop reasons, plans, permission answers, bad lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    McpServerStdio,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)
from hypothesis import given
from hypothesis import strategies as st

from ironhive.acp.approval import OPTIONS, decision_of
from ironhive.acp.editor_files import _window
from ironhive.acp.mcp_servers import server_configs, server_name
from ironhive.acp.transport import INVALID_REQUEST, PARSE_ERROR, message_problem
from ironhive.acp.updates import (
    chunk_updates,
    history_updates,
    plan_entries,
    prompt_text,
    stop_reason,
    tool_kind,
    tool_title,
)
from ironhive.domain.tool_calls import make_tool_call
from ironhive.domain.turn import TextDelta, ThinkingDelta, ToolCallChunk, ToolCallRecord, ToolResultChunk, TurnRecord
from ironhive.ports.chat import ChatMessage, Role, TextPart, ToolResultPart

CWD = Path("/project")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def test_chunks_become_message_thought_and_tool_updates() -> None:
    call = make_tool_call("c1", "read_file", json.dumps({"path": "src/a.py", "start_line": 3}))
    updates = [
        *chunk_updates(TextDelta(text="hi"), CWD),
        *chunk_updates(ThinkingDelta(text="hm"), CWD),
        *chunk_updates(ToolCallChunk(call=call), CWD),
        *chunk_updates(
            ToolResultChunk(
                record=ToolCallRecord(call_id="c1", name="read_file", arguments_text="", result="x", success=True)
            ),
            CWD,
        ),
    ]
    message, thought, start, end = updates
    assert isinstance(message, AgentMessageChunk) and message.content.text == "hi"
    assert isinstance(thought, AgentThoughtChunk) and thought.content.text == "hm"
    assert isinstance(start, ToolCallStart)
    assert (start.kind, start.title, start.status) == ("read", "Read src/a.py", "pending")
    assert start.locations is not None and (start.locations[0].path, start.locations[0].line) == (
        "/project/src/a.py",
        3,
    )
    assert isinstance(end, ToolCallProgress) and end.status == "completed" and end.raw_output == "x"


def test_a_call_of_unknown_outcome_gets_no_update() -> None:
    record = ToolCallRecord(call_id="c", name="x", arguments_text="", result="", success=None)
    assert list(chunk_updates(ToolResultChunk(record=record), CWD)) == []


@given(name=st.text(max_size=20), arguments=st.dictionaries(st.text(max_size=10), json_values, max_size=4))
def test_any_call_maps_to_a_valid_start(name: str, arguments: dict[str, Any]) -> None:
    call = make_tool_call("id", name or "t", json.dumps(arguments))
    (start,) = chunk_updates(ToolCallChunk(call=call), CWD)
    assert isinstance(start, ToolCallStart)
    assert start.title and start.kind == tool_kind(call.name)
    assert len(start.title) <= len(call.name) + 90


def test_titles_and_kinds_of_the_built_in_tools() -> None:
    assert tool_title("execute_command", {"command": "echo  a\nb"}) == "Run echo a b"
    assert tool_title("execute_command", {"command": ""}) == "execute_command"
    assert tool_title("mcp__time__now", {"path": "x"}) == "mcp__time__now"
    assert tool_title("grep_files", {"pattern": "x" * 100}).endswith("...")
    assert [tool_kind(name) for name in ("write_file", "delete_file", "grep_files", "execute_command")] == [
        "edit",
        "delete",
        "search",
        "execute",
    ]
    assert tool_kind("mcp__x__y") == "other"


def turn(finish: Any = "stop", rounds: int = 0) -> TurnRecord:
    call = make_tool_call("c", "read_file", "{}")
    messages = [ChatMessage(role=Role.ASSISTANT, parts=(call,)) for _ in range(rounds)]
    return TurnRecord(content="", finish_reason=finish, messages=tuple(messages))


def test_stop_reasons() -> None:
    assert stop_reason(turn(), 10) == "end_turn"
    assert stop_reason(turn("length"), 10) == "max_tokens"
    assert stop_reason(turn("repetition"), 10) == "max_tokens"
    assert stop_reason(turn("content_filter"), 10) == "refusal"
    assert stop_reason(turn(rounds=10), 10) == "max_turn_requests"
    assert stop_reason(turn(rounds=9), 10) == "end_turn"


def test_history_replays_user_agent_calls_and_results_in_order() -> None:
    call = make_tool_call("c1", "write_file", json.dumps({"path": "n.md", "content": "x"}))
    messages = [
        ChatMessage.of_text(Role.USER, "please"),
        ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="sure"), call)),
        ChatMessage(
            role=Role.TOOL, parts=(ToolResultPart(call_id="c1", name="write_file", result="ok", success=True),)
        ),
        ChatMessage.of_text(Role.ASSISTANT, "done"),
    ]
    kinds = [type(update) for update in history_updates(messages, CWD)]
    assert kinds == [UserMessageChunk, AgentMessageChunk, ToolCallStart, ToolCallProgress, AgentMessageChunk]


def test_todo_json_becomes_plan_entries() -> None:
    text = json.dumps(
        {
            "items": [
                {"id": 1, "task": "a", "status": "blocked", "priority": "low"},
                {"id": 2, "task": "b", "status": "in_progress"},
                {"id": 3, "task": "c", "status": "completed", "priority": "weird"},
                {"id": 4},
            ]
        }
    )
    entries = plan_entries(text) or []
    assert [(e.content, e.priority, e.status) for e in entries] == [
        ("a", "low", "pending"),
        ("b", "medium", "in_progress"),
        ("c", "medium", "completed"),
    ]
    assert plan_entries("not json") is None and plan_entries("[1]") is None


def test_prompt_text_joins_text_embedded_resources_and_links() -> None:
    blocks = [
        {"type": "text", "text": "look at"},
        {"type": "resource_link", "uri": "file:///p/a.py", "name": "a.py"},
        {"type": "resource", "resource": {"uri": "file:///p/b.py", "text": "print(1)"}},
        {"type": "image", "data": "", "mimeType": "image/png"},
    ]
    from acp.schema import PromptRequest

    request = PromptRequest.model_validate({"sessionId": "s", "prompt": blocks})
    assert prompt_text(request.prompt) == (
        'look at\n@file:///p/a.py\n<context ref="file:///p/b.py">\nprint(1)\n</context>'
    )


def selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))


def test_permission_answers_map_onto_decisions() -> None:
    allow, remember = decision_of(selected("allow_once"), OPTIONS)
    assert allow.approved and not allow.always_approve and not remember
    always, remember = decision_of(selected("allow_always"), OPTIONS)
    assert always.approved and always.always_approve and not remember
    reject, remember = decision_of(selected("reject_once"), OPTIONS)
    assert not reject.approved and not remember
    reject_always, remember = decision_of(selected("reject_always"), OPTIONS)
    assert not reject_always.approved and remember
    cancelled, remember = decision_of(RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled")), OPTIONS)
    assert not cancelled.approved and cancelled.stop and not remember


@given(st.text(max_size=20).filter(lambda text: text not in {option.option_id for option in OPTIONS}))
def test_an_option_that_was_not_offered_rejects(option_id: str) -> None:
    decision, remember = decision_of(selected(option_id), OPTIONS)
    assert not decision.approved and not remember


@given(st.binary(max_size=60))
def test_any_line_is_a_message_or_an_error_answer(line: bytes) -> None:
    message, problem = message_problem(line)
    assert (message is None) != (problem is None)
    if problem is not None:
        assert problem["jsonrpc"] == "2.0" and problem["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)
        json.dumps(problem)  # always writable


@given(json_values)
def test_json_that_is_not_a_message_is_an_invalid_request(value: Any) -> None:
    message, problem = message_problem(json.dumps(value).encode())
    if not isinstance(value, dict):
        assert problem is not None and problem["error"]["code"] == INVALID_REQUEST and message is None


def test_requests_notifications_and_responses_pass() -> None:
    for line in (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}',
        b'{"jsonrpc":"2.0","id":"a","result":null}',
    ):
        assert message_problem(line)[1] is None


@given(st.lists(st.text(max_size=40), max_size=6))
def test_editor_server_names_are_unique_and_tool_name_safe(names: list[str]) -> None:
    taken: set[str] = set()
    chosen = [server_name(name, taken) for name in names]
    assert len(set(chosen)) == len(chosen)
    assert all(name and all(c.isascii() and (c.isalnum() or c in "_-") for c in name) for name in chosen)


def test_editor_stdio_servers_become_server_settings() -> None:
    server = McpServerStdio(name="time server", command="uvx", args=["mcp-server-time"], env=[])
    (config,) = server_configs([server], CWD)
    assert (config.name, config.transport, config.command, config.arguments) == (
        "time_server",
        "stdio",
        "uvx",
        ("mcp-server-time",),
    )


@given(st.dictionaries(st.text(max_size=12), json_values, max_size=4))
def test_the_editor_is_asked_only_for_plainly_written_reads(arguments: dict[str, Any]) -> None:
    window = _window(arguments)
    if window is not None:
        path, start, count = window
        assert set(arguments) <= {"path", "start_line", "line_count"} and arguments["path"] == path
        assert start == arguments.get("start_line") and count == arguments.get("line_count")
        assert all(value is None or value >= 1 for value in (start, count))
    elif set(arguments) <= {"path", "start_line", "line_count"} and isinstance(arguments.get("path"), str):
        assert not arguments["path"].strip() or any(
            key in arguments and (type(arguments[key]) is not int or arguments[key] < 1)
            for key in ("start_line", "line_count")
        )
