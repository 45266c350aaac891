"""Newline-delimited JSON-RPC on stdio for the ACP connection, answering unreadable messages with JSON-RPC errors."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def message_problem(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Read one line: ``(message, None)`` when it is a JSON-RPC message, else ``(None, error answer)``.

    The SDK's own reader drops an unparsable line silently and fails on a JSON value that is not an object; this
    answers both as JSON-RPC 2.0 says (a parse error, an invalid request), so the client learns what went wrong and the
    agent keeps serving.
    """
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError) as error:
        return None, error_answer(None, PARSE_ERROR, "Parse error", f"not JSON: {error}")
    if not isinstance(value, dict):
        return None, error_answer(None, INVALID_REQUEST, "Invalid request", "a message must be a JSON object")
    identifier = value.get("id")
    if "id" in value and (isinstance(identifier, bool) or not isinstance(identifier, str | int | None)):
        return None, error_answer(None, INVALID_REQUEST, "Invalid request", "id must be a string, a number or null")
    method = value.get("method")
    if "method" in value and not isinstance(method, str):
        return None, error_answer(identifier, INVALID_REQUEST, "Invalid request", "method must be a string")
    is_response = "id" in value and ("result" in value or "error" in value)
    if method is None and not is_response:
        return None, error_answer(identifier, INVALID_REQUEST, "Invalid request", "neither a request nor a response")
    params = value.get("params")
    if method is not None and params is not None and not isinstance(params, dict | list):
        return None, error_answer(identifier, INVALID_REQUEST, "Invalid request", "params must be an object")
    return value, None


def error_answer(identifier: object, code: int, message: str, details: str) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response."""
    return {
        "jsonrpc": "2.0",
        "id": identifier,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }


class CheckedStdioTransport:
    """The SDK's message transport over a stream pair; bad lines are answered, not fatal.

    Args:
        reader: The client's messages (stdin).
        writer: Where messages to the client go (stdout).
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line."""
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        async with self._lock:
            if self._closed:
                raise ConnectionError("the connection is closed")
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next readable message (None at end of input); every unreadable one is answered with an error."""
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:  # longer than the stream limit: the reader dropped it
                await self.send(error_answer(None, INVALID_REQUEST, "Invalid request", "the message is too long"))
                continue
            if not line:
                return None
            if not line.strip():
                continue
            message, problem = message_problem(line)
            if message is not None:
                return message
            log.warning("unreadable ACP message answered with an error")
            await self.send(problem or {})

    async def close(self) -> None:
        """Close the writing side."""
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            self._writer.close()
