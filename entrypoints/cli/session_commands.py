"""The ``ironhive sessions [list|delete <ID>]`` command: list and delete the current project's stored sessions."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TextIO

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.ports.sessions import SessionInfo, SessionStore

_TABLE_FIRST_MESSAGE_WIDTH = 50


def register(app: App) -> None:
    """Add the ``sessions`` command to ``app``."""
    app.command(sessions, name="sessions")


def sessions(
    action: Annotated[
        Literal["list", "delete"], Parameter(name="ACTION", help="list (default) or delete (another is an error).")
    ] = "list",
    session_id: Annotated[str | None, Parameter(name="ID", help="The session to delete.")] = None,
    /,
    *,
    limit: Annotated[int, Parameter(name=["-n", "--limit"], help="How many sessions to list.")] = 10,
    output: Annotated[str, Parameter(name=["-o", "--output"], help="Output format: text or json.")] = "text",
    yes: Annotated[bool, Parameter(name=["-y", "--yes"], help="Delete without asking for confirmation.")] = False,
) -> int:
    """List and manage the sessions of the current project (-n/--limit, default 10; -o/--output json)."""
    import asyncio

    from ironhive.adapters.sessions.store import DiskCacheSessionStore
    from ironhive.domain.errors import IronHiveError

    as_json = output.strip().lower() == "json"
    store = DiskCacheSessionStore(Path.home() / ".ironhive", Path.cwd())
    try:
        if action == "delete":
            return asyncio.run(_delete(store, session_id, as_json=as_json, yes=yes))
        return asyncio.run(_list(store, limit, as_json=as_json))
    except IronHiveError as error:
        return _fail(str(error), as_json=as_json)


async def _list(store: SessionStore, limit: int, *, as_json: bool) -> int:
    found = await store.list(limit)
    if as_json:
        _print_json([session_json(info) for info in found])
    elif not found:
        sys.stdout.write("No sessions found.\n")
    elif sys.stdout.isatty():
        _print_rich_table(found)
    else:
        sys.stdout.write(plain_table(found))
    return 0


async def _delete(store: SessionStore, session_id: str | None, *, as_json: bool, yes: bool) -> int:
    from ironhive.domain.errors import SessionNotFoundError

    if not session_id:
        return _fail("Session ID required", as_json=as_json)
    try:
        await store.get(session_id)
    except SessionNotFoundError:
        return _fail(f"Session not found: {session_id}", as_json=as_json)
    if not as_json and not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            sys.stderr.write(
                f"Error: Not deleting session {session_id} without confirmation (no terminal to ask on); "
                "pass --yes to delete it.\n"
            )
            return 1
        if not _confirm(f"Delete session {session_id}? [y/N] ", sys.stdin, sys.stdout):
            sys.stdout.write("Cancelled.\n")
            return 0
    if not await store.delete(session_id):
        return _fail(f"Session not found: {session_id}", as_json=as_json)
    if as_json:
        _print_json({"deleted": session_id, "success": True})
    else:
        sys.stdout.write(f"Deleted session {session_id}\n")
    return 0


def session_json(info: SessionInfo) -> dict[str, object]:
    """The camelCase ``sessions list --output json`` object of one session (``firstMessage`` omitted when none)."""
    from ironhive.adapters.sessions.codec import round_trip_time

    fields: dict[str, object] = {
        "id": info.id,
        "status": info.status,
        "model": info.model,
        "created": round_trip_time(info.created),
        "messageCount": info.message_count,
    }
    if info.first_message is not None:
        fields["firstMessage"] = info.first_message
    return fields


_HEADERS = ("ID", "Status", "Model", "Created", "Messages", "First Message")


def table_rows(found: Sequence[SessionInfo]) -> list[tuple[str, ...]]:
    """The text cells of the session table: created in local time, first message on one line and shortened."""
    rows: list[tuple[str, ...]] = []
    for info in found:
        first = " ".join((info.first_message or "").split())
        if len(first) > _TABLE_FIRST_MESSAGE_WIDTH:
            first = first[: _TABLE_FIRST_MESSAGE_WIDTH - 3] + "..."
        created = info.created.astimezone().strftime("%Y-%m-%d %H:%M")
        rows.append((info.id, info.status, info.model, created, str(info.message_count), first))
    return rows


def plain_table(found: Sequence[SessionInfo]) -> str:
    """The session table as aligned plain text (for pipes and files)."""
    rows = [_HEADERS, *table_rows(found)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_HEADERS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"


def _print_rich_table(found: Sequence[SessionInfo]) -> None:
    from rich.table import Table
    from rich.text import Text

    from ironhive.cli.render import rich_console

    table = Table(title="Sessions")
    for header in _HEADERS:
        table.add_column(header, justify="right" if header == "Messages" else "left")
    for row in table_rows(found):
        table.add_row(*(Text(cell) for cell in row))  # Text: a "[" in a message is not rich markup
    rich_console().print(table)  # no escape sequences under NO_COLOR


def _confirm(question: str, terminal_in: TextIO, terminal_out: TextIO) -> bool:
    terminal_out.write(question)
    terminal_out.flush()
    answer = terminal_in.readline()
    return answer.strip().lower() in {"y", "yes"}


def _fail(message: str, *, as_json: bool) -> int:
    if as_json:
        _print_json({"error": message, "code": 1})
    else:
        sys.stderr.write(f"Error: {message}\n")
    return 1


def _print_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
