"""``write_file``/``edit_file`` seen by the editor: each change as an ACP diff, and through ``fs/write_text_file``.

The built-in tool always writes first, on disk, with every rule it has (the permission verdict, the path resolved once,
links, hard links, outside-workdir). Only a call that succeeded is passed on, and only for the very file the tool
judged and wrote: it is read back without following links, as one regular file with one name, and its text is what
the editor is given (for its diff view and, when it offers ``fs.writeTextFile``, its open buffer). The editor's write
carries the bytes the disk already holds, so it can neither reach another file nor change a different one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from acp.exceptions import RequestError

from ironhive.adapters.config.safe_files import read_at_most
from ironhive.adapters.tools.base import MAX_TEXT_BYTES, BuiltInTool
from ironhive.adapters.tools.safe_open import open_file
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.paths import ResolvedPath
from ironhive.ports.chat import JsonValue, ToolSpec
from ironhive.ports.tools import Tool

log = logging.getLogger(__name__)

WRITING_TOOLS = frozenset({"write_file", "edit_file"})
MISSING = object()
"""The snapshot of a file that did not exist (a new file: the diff has no old text)."""

WriteEditor = Callable[[str, str], Awaitable[None]]
"""Writes ``content`` to ``path`` (absolute) through the editor."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FileChange:
    """What one successful write did to one file.

    Attributes:
        path: The file's canonical absolute path (the one the rules judged).
        old_text: Its text before (None: it did not exist).
        new_text: Its text after.
    """

    path: str
    old_text: str | None
    new_text: str


class FileChanges:
    """The changes of the running turn, handed from the tools to the session's updates by tool and path argument."""

    def __init__(self) -> None:
        self._changes: defaultdict[tuple[str, str], deque[FileChange]] = defaultdict(deque)

    def add(self, tool: str, path: str, change: FileChange) -> None:
        """Keep a change for the call of ``tool`` whose path argument was ``path``."""
        self._changes[(tool, path)].append(change)

    def take(self, tool: str, path: str) -> FileChange | None:
        """The oldest change kept for that call, or None."""
        queue = self._changes.get((tool, path))
        return queue.popleft() if queue else None

    def clear(self) -> None:
        """Forget what no update took (a new turn begins)."""
        self._changes.clear()


def read_text(resolved: ResolvedPath) -> str | object | None:
    """The file's text as a UTF-8 editor would hold it, :data:`MISSING`, or None when it is no such text.

    Opened without following links; None for anything but one regular file with one name, over the size limit, with a
    byte-order mark or not valid UTF-8 (an editor would write such a file back in another encoding).
    """
    try:
        descriptor = open_file(resolved.full, os.O_RDONLY | os.O_NONBLOCK, resolved.full)
    except FileNotFoundError:
        return MISSING
    except (OSError, ToolError):
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1 or status.st_size > MAX_TEXT_BYTES:
            return None
        data = read_at_most(descriptor, MAX_TEXT_BYTES)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > MAX_TEXT_BYTES or data.startswith(b"\xef\xbb\xbf") or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class EditorWriteTool:
    """A built-in ``write_file``/``edit_file`` whose successful changes reach the editor.

    Args:
        inner: The built-in tool (it decides and does everything on disk).
        changes: Where each change is kept for the call's ``tool_call_update`` (a diff).
        write: Writes through the editor (``fs/write_text_file``), or None when the editor offers no writes.
    """

    def __init__(self, inner: BuiltInTool, changes: FileChanges, write: WriteEditor | None) -> None:
        self._inner = inner
        self._changes = changes
        self._write = write

    @property
    def spec(self) -> ToolSpec:
        """The built-in tool's spec (the model sees no difference)."""
        return self._inner.spec

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Write through the built-in tool, then give the editor the file it wrote."""
        argument = arguments.get("path")
        path = argument if isinstance(argument, str) else ""
        resolved: ResolvedPath | None = None
        if path.strip() and "\0" not in path:
            with contextlib.suppress(ToolError):  # the tool itself reports an unusable path
                resolved = self._inner.resolve(path)  # the resolution the rules judged for this call
        before = await asyncio.to_thread(read_text, resolved) if resolved is not None else None
        result = await self._inner.invoke(arguments)
        if resolved is None or before is None or resolved.directory:
            return result
        after = await asyncio.to_thread(read_text, resolved)
        if not isinstance(after, str):
            return result
        old = before if isinstance(before, str) else None
        self._changes.add(self.spec.name, path, FileChange(path=resolved.full, old_text=old, new_text=after))
        if self._write is not None:
            try:
                await self._write(resolved.full, after)
            except (RequestError, ConnectionError, OSError) as error:
                log.info("the editor could not take %s (%s): the file on disk is written", resolved.full, error)
        return result


def editor_writes(changes: FileChanges, write: WriteEditor | None) -> Callable[[Sequence[Tool]], Sequence[Tool]]:
    """The adapter of the built-in tools that passes ``write_file``/``edit_file`` changes on (others unchanged)."""

    def adapt(tools: Sequence[Tool]) -> Sequence[Tool]:
        return [
            EditorWriteTool(tool, changes, write)
            if tool.spec.name in WRITING_TOOLS and isinstance(tool, BuiltInTool)
            else tool
            for tool in tools
        ]

    return adapt
