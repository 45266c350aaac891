"""The file tools: read_file, write_file, edit_file and delete_file."""

from __future__ import annotations

import asyncio
import codecs
import errno
import io
import os
import re
import stat
from typing import ClassVar

from ironhive.adapters.tools.arguments import Arguments, object_schema
from ironhive.adapters.tools.base import MAX_TEXT_BYTES, BuiltInTool, human_size, looks_binary, text_encoding
from ironhive.adapters.tools.safe_open import open_file, open_parent
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.paths import ResolvedPath
from ironhive.ports.chat import JsonValue

_PATH = "Path of the file, relative to the working directory or absolute."
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_SNIFF_BYTES = 8192


def _split_bom(data: bytes) -> tuple[str, bytes]:
    """The codec and byte-order mark of a file's bytes; writing back ``bom + text.encode(codec)`` keeps its encoding."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec, bom
    return "utf-8", b""


def _open_regular(resolved: ResolvedPath, shown: str, flags: int, *, writing: bool, hint: str = "") -> io.FileIO:
    """Open the resolved file (never through a link) and make sure it is one regular file with the name judged.

    Hard links: a file with more than one name may have its other name outside the working directory, so no tool
    changes one (``writing``), and a read goes ahead only when the rules judged it as such (``resolve_path`` counts it
    as outside the working directory, so it was asked about or allowed by the ``external_directory`` rules); a file
    that gained a name after being judged is refused.

    Raises:
        ToolError: Missing, a directory, not a regular file, or a hard link the call may not use.
        OSError: Any other failure to open it.
    """
    try:
        descriptor = open_file(resolved.full, flags | os.O_NONBLOCK, shown, create_parents=bool(flags & os.O_CREAT))
    except IsADirectoryError:
        raise ToolError(f"'{shown}' is a directory, not a file") from None
    except (FileNotFoundError, NotADirectoryError) as exc:
        if writing and exc.errno == errno.ENOTDIR:
            raise
        raise ToolError(f"File not found: {shown}{hint}") from None
    try:
        status = os.fstat(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise ToolError(f"'{shown}' is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise ToolError(f"'{shown}' is not a regular file")
        if status.st_nlink > 1 and (writing or not resolved.linked):
            raise ToolError(
                f"Refusing to {'change' if writing else 'read'} '{shown}': it is a hard link (one of "
                f"{status.st_nlink} names of the same file), and another name may be outside the working directory"
            )
    except BaseException:
        os.close(descriptor)
        raise
    return io.FileIO(descriptor, "r+" if flags & (os.O_WRONLY | os.O_RDWR) else "r", closefd=True)


class ReadFileTool(BuiltInTool):
    """``read_file``: returns a text file's content, whole or as a 1-based window of lines."""

    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file and return its content. Use start_line and line_count to read part of a file; "
        "files over 1 MB can only be read in parts."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "path": {"type": "string", "description": _PATH},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based (optional)."},
            "line_count": {"type": "integer", "minimum": 1, "description": "How many lines to read (optional)."},
        },
        required=["path"],
    )

    async def _run(self, arguments: Arguments) -> str:
        shown = arguments.string("path")
        path = self.resolve(shown)
        start = arguments.optional_integer("start_line")
        count = arguments.optional_integer("line_count")
        return await asyncio.to_thread(self._read, path, shown, start, count)

    @staticmethod
    def _read(path: ResolvedPath, shown: str, start: int | None, count: int | None) -> str:
        with _open_regular(path, shown, os.O_RDONLY, writing=False) as raw:
            head = raw.read(_SNIFF_BYTES)
            if looks_binary(head):
                raise ToolError(f"Cannot read binary file: {shown}")
            encoding = text_encoding(head)
            raw.seek(0)
            if start is None and count is None:
                size = os.fstat(raw.fileno()).st_size
                if size > MAX_TEXT_BYTES:
                    raise ToolError(
                        f"File too large: {shown} is {human_size(size)} (limit {human_size(MAX_TEXT_BYTES)}). "
                        "Read it in parts with start_line and line_count."
                    )
                with _text(raw, encoding) as text:
                    return text.read()
            return _read_window(raw, shown, encoding, start or 1, count)


def _text(raw: io.FileIO, encoding: str) -> io.TextIOWrapper:
    # Universal newlines, as reading a path in text mode gives; closing the wrapper closes the file.
    return io.TextIOWrapper(io.BufferedReader(raw), encoding=encoding, errors="replace")


def _read_window(raw: io.FileIO, shown: str, encoding: str, start: int, count: int | None) -> str:
    """Lines ``start`` .. ``start + count - 1`` of a text file, read as a stream so a big file costs little memory."""
    end = None if count is None else start + count
    kept: list[str] = []
    kept_chars = 0
    total = 0
    with _text(raw, encoding) as handle:
        for number, line in enumerate(handle, start=1):
            total = number
            if end is not None and number >= end:
                break
            if number >= start:
                kept.append(line)
                kept_chars += len(line)
                if kept_chars > MAX_TEXT_BYTES:
                    raise ToolError(
                        f"The requested lines of {shown} exceed {human_size(MAX_TEXT_BYTES)}; "
                        "ask for fewer lines with line_count."
                    )
    if start > max(total, 1):
        raise ToolError(f"start_line {start} is past the end of {shown} ({total} lines)")
    return "".join(kept)


class WriteFileTool(BuiltInTool):
    """``write_file``: creates or overwrites a file (or appends to it), creating parent directories."""

    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Write text to a file, creating it and its parent directories if needed. Overwrites an existing file "
        "unless append is true. To change part of an existing file, prefer edit_file."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "path": {"type": "string", "description": _PATH},
            "content": {"type": "string", "description": "The text to write."},
            "append": {
                "type": "boolean",
                "default": False,
                "description": "Append to the end of the file instead of overwriting it.",
            },
        },
        required=["path", "content"],
    )

    async def _run(self, arguments: Arguments) -> str:
        shown = arguments.string("path")
        path = self.resolve(shown)
        append = arguments.boolean("append")
        await asyncio.to_thread(self._write, path, shown, arguments.string("content"), append)
        return f"Successfully appended to file: {shown}" if append else f"Successfully wrote to file: {shown}"

    @staticmethod
    def _write(path: ResolvedPath, shown: str, content: str, append: bool) -> None:
        # Opened without truncating: a hard-linked file must be refused before any byte of it changes.
        with _open_regular(path, shown, os.O_RDWR | os.O_CREAT, writing=True) as handle:
            codec, bom = "utf-8", b""
            head = handle.read(_SNIFF_BYTES)
            if head:
                # An existing file keeps its encoding and line endings; otherwise an append to a UTF-16 or CRLF file
                # would mix formats inside it.
                codec, bom = _split_bom(head)
                existing = head[len(bom) :].decode(codec, errors="ignore")
                if "\r\n" in existing and "\r\n" not in content:
                    content = content.replace("\n", "\r\n")
            data = content.encode(codec)
            if append and head:
                handle.seek(0, os.SEEK_END)
            else:
                handle.seek(0)
                handle.truncate()
                data = bom + data
            _write_all(handle, data)


def _write_all(handle: io.FileIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = handle.write(view) or 0
        view = view[written:]


class EditFileTool(BuiltInTool):
    """``edit_file``: replaces exact text in an existing file, once (the text must be unique) or everywhere."""

    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Replace exact text in an existing file; prefer this to write_file for changing part of a file. old_string "
        "must match the file exactly (whitespace included) and occur once - add surrounding lines to make it "
        "unique - unless replace_all is true."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "path": {"type": "string", "description": _PATH},
            "old_string": {"type": "string", "description": "The exact text to replace, copied from the file."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence instead of requiring exactly one.",
            },
        },
        required=["path", "old_string", "new_string"],
    )

    async def _run(self, arguments: Arguments) -> str:
        shown = arguments.string("path")
        path = self.resolve(shown)
        old = arguments.string("old_string")
        new = arguments.string("new_string")
        if not old:
            raise ToolError("old_string is empty; give the exact text to replace, or use write_file for a whole file")
        if old == new:
            raise ToolError("old_string and new_string are the same; there is nothing to change")
        count = await asyncio.to_thread(self._edit, path, shown, old, new, arguments.boolean("replace_all"))
        return f"Successfully edited {shown} ({count} replacement{'' if count == 1 else 's'})"

    @staticmethod
    def _edit(path: ResolvedPath, shown: str, old: str, new: str, replace_all: bool) -> int:
        hint = ". edit_file changes an existing file; use write_file to create one."
        with _open_regular(path, shown, os.O_RDWR, writing=True, hint=hint) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_TEXT_BYTES:
                raise ToolError(
                    f"File too large to edit: {shown} is {human_size(size)} (limit {human_size(MAX_TEXT_BYTES)})"
                )
            data = handle.readall()
            edited, count = _replace(data, shown, old, new, replace_all)
            handle.seek(0)
            handle.truncate()
            _write_all(handle, edited)
        return count


def _replace(data: bytes, shown: str, old: str, new: str, replace_all: bool) -> tuple[bytes, int]:
    """The file's bytes with ``old`` replaced, in the file's own encoding and line endings, and the count."""
    if looks_binary(data[:8192]):
        raise ToolError(f"Cannot edit binary file: {shown}")
    codec, bom = _split_bom(data)
    try:
        content = data[len(bom) :].decode(codec)
    except UnicodeDecodeError as exc:
        raise ToolError(f"Cannot edit {shown}: it is not valid {codec} text") from exc
    # The model may send "\n" for a CRLF file; both strings take the file's own line ending.
    newline = "\r\n" if "\r\n" in content else "\n"
    find = old.replace("\r\n", "\n").replace("\n", newline)
    replacement = new.replace("\r\n", "\n").replace("\n", newline)
    count = content.count(find)
    if count == 0:
        loose = _collapse(find) in _collapse(content)
        hint = (
            " (text differing only in whitespace exists; read the file and copy it exactly)"
            if loose
            else "; read the file and copy the text exactly"
        )
        raise ToolError(f"old_string not found in {shown}{hint}")
    if count > 1 and not replace_all:
        raise ToolError(f"old_string occurs {count} times in {shown}; add more context or set replace_all")
    edited = content.replace(find, replacement)
    return bom + edited.encode(codec), count


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class DeleteFileTool(BuiltInTool):
    """``delete_file``: deletes one file; never a directory."""

    name: ClassVar[str] = "delete_file"
    description: ClassVar[str] = (
        "Delete one file (not a directory). If it is unclear which file is meant, delete nothing and ask."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {"path": {"type": "string", "description": _PATH}}, required=["path"]
    )

    async def _run(self, arguments: Arguments) -> str:
        shown = arguments.string("path")
        path = self.resolve(shown, follow_last=False)
        await asyncio.to_thread(self._delete, path, shown)
        return f"Successfully deleted file: {shown}"

    @staticmethod
    def _delete(path: ResolvedPath, shown: str) -> None:
        """Remove the judged name: a symbolic link is removed itself (what it points to stays), a hard link refused."""
        try:
            directory, name = open_parent(path.full, shown)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(f"File not found: {shown}") from None
        try:
            try:
                status = os.stat(name, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                raise ToolError(f"File not found: {shown}") from None
            if stat.S_ISDIR(status.st_mode):
                raise ToolError(f"'{shown}' is a directory; delete_file deletes files only")
            if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
                raise ToolError(
                    f"Refusing to delete '{shown}': it is a hard link (one of {status.st_nlink} names of the same "
                    "file), and another name may be outside the working directory"
                )
            # unlinkat never follows a link, so only the name judged goes, even if it was swapped meanwhile.
            os.unlink(name, dir_fd=directory)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, path.full) from None
        finally:
            os.close(directory)
