"""The SessionStore and ExecutionLog ports: persistent conversations and the per-session log of turns and tool calls."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from ironhive.ports.chat import ChatMessage, JsonValue

SessionStatus: TypeAlias = Literal["active", "ended", "error", "forked"]
"""Where a session stands: no end yet, ended normally, ended by an error, or copied into a fork."""

EndReason: TypeAlias = Literal["user_exit", "completed", "error", "forked"]
"""Why a session ended; ``user_exit`` and ``completed`` give the status ``ended``, the others their own name."""

FIRST_MESSAGE_LIMIT = 100
"""``SessionInfo.first_message`` holds at most this many characters of the first user message."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionInfo:
    """What a listing shows about one stored session.

    Attributes:
        id: "<unix milliseconds in hex>-<8 random hex>", so ids sort by creation time.
        status: ``active`` until the session ends; then ``ended``, ``error`` or ``forked``.
        model: The model the session was created with.
        created: When the session was created (UTC).
        updated: When the session was last written (UTC).
        message_count: The user messages plus the assistant messages that carry text (an assistant round made only
            of tool calls is not a message of the conversation).
        first_message: The first user message cut to ``FIRST_MESSAGE_LIMIT`` characters; ``None`` before there is one.
        forked_from: The id of the session this one was forked from, if it was.
    """

    id: str
    status: SessionStatus
    model: str
    created: datetime
    updated: datetime
    message_count: int = 0
    first_message: str | None = None
    forked_from: str | None = None


@runtime_checkable
class SessionStore(Protocol):
    """The stored conversations of one project, safe to share between processes."""

    async def create(self, model: str, session_id: str | None = None) -> SessionInfo:
        """Start a new, empty session.

        Args:
            model: The model the session talks to (shown in listings).
            session_id: The id to use (a server's ``--session-id``); a new sortable id when ``None``.

        Returns:
            The new session, status ``active``.
        """
        ...

    async def new_id(self) -> str:
        """A fresh sortable session id (``<ms hex>-<8 hex>``) for a session not created yet; nothing is stored."""
        ...

    async def append_turn(self, session_id: str, messages: Sequence[ChatMessage]) -> None:
        """Store the messages one turn added, all or nothing.

        Args:
            session_id: The session to extend.
            messages: The turn's messages in order (user, assistant, tool).

        Raises:
            SessionNotFoundError: No session has this id.
        """
        ...

    async def load_messages(self, session_id: str) -> tuple[ChatMessage, ...]:
        """The whole stored conversation, oldest message first.

        Raises:
            SessionNotFoundError: No session has this id.
        """
        ...

    async def end(self, session_id: str, reason: EndReason) -> None:
        """Mark the session ended; its status follows from ``reason``.

        Raises:
            SessionNotFoundError: No session has this id.
        """
        ...

    async def latest(self) -> SessionInfo | None:
        """The session written most recently, or ``None`` when the project has none."""
        ...

    async def list(self, limit: int) -> builtins.list[SessionInfo]:
        """At most ``limit`` sessions, newest first (by creation)."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Remove a session and its messages; ``False`` when there was no such session."""
        ...

    async def fork(self, session_id: str) -> SessionInfo:
        """Copy a session's messages into a new session and end the original with reason ``forked``.

        Returns:
            The new session.

        Raises:
            SessionNotFoundError: No session has this id.
        """
        ...

    async def get(self, session_id: str) -> SessionInfo:
        """One session's listing entry.

        Raises:
            SessionNotFoundError: No session has this id.
        """
        ...


ToolArguments: TypeAlias = Mapping[str, JsonValue] | str | None
"""A tool call's parsed arguments, or the raw text when it could not be parsed, or ``None``."""


@runtime_checkable
class ExecutionLog(Protocol):
    """An append-only record of what each turn of a session did, for later inspection."""

    async def turn_start(self, session_id: str, turn: int, prompt: str) -> None:
        """Record that turn number ``turn`` started with ``prompt`` (long prompts are shortened)."""
        ...

    async def tool_call(
        self, session_id: str, turn: int, step: int, call_id: str, tool: str, arguments: ToolArguments
    ) -> None:
        """Record that a tool call started.

        Args:
            session_id: The session the turn belongs to.
            turn: The turn's number within the session.
            step: The call's position within the turn.
            call_id: The provider's id of the call.
            tool: The tool's name.
            arguments: The call's arguments.
        """
        ...

    async def turn_end(
        self,
        session_id: str,
        turn: int,
        *,
        response_length: int,
        tool_calls: int,
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> None:
        """Record that a turn finished.

        Args:
            session_id: The session the turn belongs to.
            turn: The turn's number within the session.
            response_length: Characters of the assistant's answer.
            tool_calls: How many tool calls the turn made.
            input_tokens: Input tokens over the turn; ``None`` when not reported.
            output_tokens: Output tokens over the turn; ``None`` when not reported.
        """
        ...


__all__ = [
    "FIRST_MESSAGE_LIMIT",
    "EndReason",
    "ExecutionLog",
    "SessionInfo",
    "SessionStatus",
    "SessionStore",
    "ToolArguments",
]
