"""``read_file`` through the editor (ACP ``fs/read_text_file``): reads see unsaved buffers; the disk read judges."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from acp.exceptions import RequestError

from ironhive.adapters.tools.base import MAX_TEXT_BYTES
from ironhive.ports.chat import JsonValue, ToolSpec
from ironhive.ports.tools import Tool

log = logging.getLogger(__name__)

READ_FILE = "read_file"
_PLAIN_ARGUMENTS = frozenset({"path", "start_line", "line_count"})

ReadEditor = Callable[[str, int | None, int | None], Awaitable[str]]
"""Reads ``path`` (absolute) from the editor: from 1-based ``line``, at most ``limit`` lines (None: all)."""


def _window(arguments: Mapping[str, JsonValue]) -> tuple[str, int | None, int | None] | None:
    """The path and line window of a plainly written call, or None (the editor is then not asked)."""
    if not set(arguments) <= _PLAIN_ARGUMENTS:
        return None  # spellings the tool normalises itself: its disk answer stands
    path, start, count = arguments.get("path"), arguments.get("start_line"), arguments.get("line_count")
    if not isinstance(path, str) or not path.strip():
        return None
    for value in (start, count):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            return None
    return path, start if isinstance(start, int) else None, count if isinstance(count, int) else None


class EditorReadFileTool:
    """The built-in ``read_file`` whose content comes from the editor when the editor can give it.

    The built-in tool runs first and decides everything about the call: the path is resolved once, the read rules,
    links, binary files and the size limit apply as on disk, and a refusal stays a refusal. Only then is the editor
    asked for the same file (its real path) and window; its answer, the buffer as the user sees it with unsaved edits,
    replaces the disk content. When the editor fails or answers more than the size limit, the disk content stands.

    Args:
        inner: The built-in ``read_file``.
        root: The working directory the tool resolves paths in.
        read: Asks the editor for a file's text.
    """

    def __init__(self, inner: Tool, root: Path, read: ReadEditor) -> None:
        self._inner = inner
        self._root = root
        self._read = read

    @property
    def spec(self) -> ToolSpec:
        """The built-in tool's spec (the model sees no difference)."""
        return self._inner.spec

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Read through the built-in tool, then take the editor's buffer of the same file and window."""
        disk = await self._inner.invoke(arguments)
        window = _window(arguments)
        if window is None:
            return disk
        path, start, count = window
        target = await asyncio.to_thread(os.path.realpath, self._root / path)
        try:
            text = await self._read(target, start, count)
        except (RequestError, ConnectionError, OSError) as error:
            log.info("the editor could not read %s (%s): the file on disk is used", target, error)
            return disk
        return disk if len(text) > MAX_TEXT_BYTES else text


def editor_reads(read: ReadEditor, root: Path) -> Callable[[Sequence[Tool]], Sequence[Tool]]:
    """The adapter of the built-in tools that sends ``read_file`` through the editor (every other tool unchanged)."""

    def adapt(tools: Sequence[Tool]) -> Sequence[Tool]:
        return [EditorReadFileTool(tool, root, read) if tool.spec.name == READ_FILE else tool for tool in tools]

    return adapt
