"""Conversations using every kind of message part, and deterministic ids, for the session tests."""

from __future__ import annotations

from ironhive.ports.chat import ChatMessage, Role, TextPart, ThinkingPart, ToolCallPart, ToolResultPart


class CountingIds:
    """Ids whose last 8 hex digits count up: 000…0001, 000…0002, …"""

    def __init__(self, start: int = 1) -> None:
        self._next = start

    def new_id(self) -> str:
        value = self._next
        self._next += 1
        return f"{value:032x}"


def tool_turn(prompt: str = "List the files, please.") -> tuple[ChatMessage, ...]:
    """A turn with thinking, a tool call that parsed, one that did not, their results and a final answer."""
    return (
        ChatMessage.of_text(Role.USER, prompt),
        ChatMessage(
            role=Role.ASSISTANT,
            parts=(
                ThinkingPart(text="I should look at the folder — ünïcödé too."),
                TextPart(text="Let me look."),
                ToolCallPart(
                    call_id="call_1",
                    name="list_directory",
                    arguments={"path": ".", "depth": 2, "hidden": False, "glob": None, "tags": ["a", 1.5]},
                    arguments_text='{"path": ".", "depth": 2, "hidden": false, "glob": null, "tags": ["a", 1.5]}',
                ),
                ToolCallPart(
                    call_id="call_2",
                    name="read_file",
                    arguments=None,
                    arguments_text='{"path": ',
                    parse_error="JSONDecodeError: Expecting value: line 1 column 10 (char 9)",
                ),
            ),
        ),
        ChatMessage(
            role=Role.TOOL,
            parts=(
                ToolResultPart(call_id="call_1", name="list_directory", result="[DIR]  src/", success=True),
                ToolResultPart(call_id="call_2", name="read_file", result="Error: bad arguments", success=False),
            ),
        ),
        ChatMessage(
            role=Role.TOOL,
            parts=(ToolResultPart(call_id="call_3", name="mcp_tool", result="unknown outcome", success=None),),
        ),
        ChatMessage.of_text(Role.ASSISTANT, "There is one folder: src/."),
    )


def text_turn(prompt: str, answer: str) -> tuple[ChatMessage, ...]:
    """A plain question and answer."""
    return (ChatMessage.of_text(Role.USER, prompt), ChatMessage.of_text(Role.ASSISTANT, answer))
