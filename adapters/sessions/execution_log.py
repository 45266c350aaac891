"""JsonlExecutionLog: each session's turns and tool calls as camelCase JSON lines in ``<logs>/<id>.execlog.jsonl``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from ironhive.adapters.config.masking import mask_urls, mask_value
from ironhive.adapters.config.private_files import make_private_directory, open_private
from ironhive.adapters.sessions.codec import round_trip_time
from ironhive.ports.chat import JsonValue
from ironhive.ports.sessions import ToolArguments
from ironhive.ports.system import Clock

PROMPT_LIMIT = 500
"""A ``turn_start`` line keeps at most this many characters of the prompt."""


class ExecutionEntries:
    """The entries of an execution log, shaped and masked once for every store: ``turn_start``, ``tool_call`` and
    ``turn_end`` as camelCase JSON objects stamped with the clock's time; a store writes each one's line.

    Args:
        clock: The time stamped on each entry (the system clock by default).
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        from ironhive.adapters.system import SystemClock

        self._clock: Clock = clock or SystemClock()

    async def turn_start(self, session_id: str, turn: int, prompt: str) -> None:
        """Append ``{"type":"turn_start","turn","prompt","timestamp"}`` (URL credentials masked, cut to 500 chars)."""
        await self._append(session_id, {"type": "turn_start", "turn": turn, "prompt": mask_urls(prompt)[:PROMPT_LIMIT]})

    async def tool_call(
        self, session_id: str, turn: int, step: int, call_id: str, tool: str, arguments: ToolArguments
    ) -> None:
        """Append ``{"type":"tool_call","turn","step","id","tool","arguments","timestamp"}`` (secrets masked)."""
        encoded: JsonValue
        if arguments is None:
            encoded = None
        elif isinstance(arguments, str):  # arguments the model sent as unparsable text
            encoded = mask_urls(arguments)
        else:
            encoded = mask_value("arguments", dict(arguments))
        await self._append(
            session_id,
            {"type": "tool_call", "turn": turn, "step": step, "id": call_id, "tool": tool, "arguments": encoded},
        )

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
        """Append a ``turn_end`` line: type, turn, responseLength, toolCalls, inputTokens, outputTokens, timestamp."""
        await self._append(
            session_id,
            {
                "type": "turn_end",
                "turn": turn,
                "responseLength": response_length,
                "toolCalls": tool_calls,
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
            },
        )

    async def _append(self, session_id: str, fields: dict[str, JsonValue]) -> None:
        fields["timestamp"] = round_trip_time(self._clock.now())
        await self._write_line(session_id, json.dumps(fields, ensure_ascii=False, separators=(",", ":")))

    async def _write_line(self, session_id: str, line: str) -> None:
        """Store one entry's JSON text (no newline) at the end of the session's log."""
        raise NotImplementedError


class JsonlExecutionLog(ExecutionEntries):
    """An append-only JSON Lines log per session (the original's ``~/.ironhive/logs``).

    Each line is written by a single ``write`` to a file opened for appending, so lines of concurrent writers never
    interleave; the folder (0700) and file (0600: tool arguments may hold secrets) are created on first use; writing
    happens in a worker thread. Secrets in prompts and tool arguments are masked as ``ironhive get`` masks them
    (:mod:`ironhive.adapters.config.masking`).

    Args:
        logs_dir: The folder of the logs (``~/.ironhive/logs``).
        clock: The time stamped on each line (the system clock by default).
    """

    def __init__(self, logs_dir: Path, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self._logs_dir = logs_dir

    def path_for(self, session_id: str) -> Path:
        """The log file of ``session_id``."""
        if (
            not session_id
            or any(separator in session_id for separator in ("/", "\\", "\0"))
            or session_id in {".", ".."}
        ):
            raise ValueError(f"Not a usable session id for a log file name: {session_id!r}")
        return self._logs_dir / f"{session_id}.execlog.jsonl"

    async def _write_line(self, session_id: str, line: str) -> None:
        path = self.path_for(session_id)
        await asyncio.to_thread(_append_line, path, (line + "\n").encode("utf-8"))


def _append_line(path: Path, line: bytes) -> None:
    make_private_directory(path.parent)
    descriptor = open_private(path, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(line)
        while view:  # a regular file takes the whole line at once; the loop only guards a short write
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
