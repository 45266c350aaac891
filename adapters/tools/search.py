"""The read-only search tools: list_directory, glob_files and grep_files."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ironhive.adapters.tools.arguments import Arguments, object_schema
from ironhive.adapters.tools.base import SKIPPED_DIRECTORIES, BuiltInTool, human_size, looks_binary, text_encoding
from ironhive.adapters.tools.globbing import compile_glob, walk_files
from ironhive.domain.errors import ToolError
from ironhive.ports.chat import JsonValue

MAX_LISTED = 500
"""The most directories, and separately files, that list_directory shows."""
MAX_GLOB_RESULTS = 100
"""The most paths glob_files shows."""
MAX_GREP_FILES = 50
"""The most files with matches that grep_files reports."""
MAX_GREP_MATCHES = 100
"""The most matching lines that grep_files reports."""
MAX_GREP_LINE = 200
"""Matching lines are cut to this many characters."""

_DIRECTORY = "Directory to search, relative to the working directory or absolute (default: the working directory)."


def _require_directory(path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolError(f"Directory not found: {shown}")
    if not path.is_dir():
        raise ToolError(f"Not a directory: {shown}")


class ListDirectoryTool(BuiltInTool):
    """``list_directory``: a directory's subdirectories and files (with sizes), optionally recursive."""

    name: ClassVar[str] = "list_directory"
    description: ClassVar[str] = (
        "List the subdirectories and files of a directory, with file sizes. With recursive=true, list everything "
        "below it (paths relative to it); .git is skipped."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "path": {
                "type": "string",
                "default": ".",
                "description": "Directory to list, relative to the working directory or absolute (default: '.').",
            },
            "recursive": {"type": "boolean", "default": False, "description": "List all levels below the directory."},
        }
    )

    async def _run(self, arguments: Arguments) -> str:
        shown = arguments.string("path")
        return await asyncio.to_thread(self._list, self.resolve(shown), shown, arguments.boolean("recursive"))

    @staticmethod
    def _list(base: Path, shown: str, recursive: bool) -> str:
        _require_directory(base, shown)
        directories: list[str] = []
        files: list[tuple[str, int]] = []
        if recursive:
            for directory, subdirectories, filenames in os.walk(base):
                subdirectories[:] = [name for name in subdirectories if name not in SKIPPED_DIRECTORIES]
                relative = os.path.relpath(directory, base)
                prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
                directories.extend(prefix + name for name in subdirectories)
                files.extend((prefix + name, _size(Path(directory, name))) for name in filenames)
        else:
            with os.scandir(base) as entries:
                for entry in entries:
                    if entry.name in SKIPPED_DIRECTORIES:
                        continue
                    if entry.is_dir():
                        directories.append(entry.name)
                    else:
                        files.append((entry.name, _size(Path(entry.path))))
        if not directories and not files:
            return f"Directory {shown} is empty"
        directories.sort()
        files.sort()
        lines = [f"[DIR]  {name}/" for name in directories[:MAX_LISTED]]
        lines += [f"[FILE] {name} ({human_size(size)})" for name, size in files[:MAX_LISTED]]
        if len(directories) > MAX_LISTED or len(files) > MAX_LISTED:
            lines.append(
                f"... (truncated: showing {min(len(directories), MAX_LISTED)} of {len(directories)} directories "
                f"and {min(len(files), MAX_LISTED)} of {len(files)} files)"
            )
        return "\n".join(lines)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        # A dangling symbolic link has no target to measure.
        return 0


class GlobFilesTool(BuiltInTool):
    """``glob_files``: the files whose relative paths match a glob pattern, ``**`` included."""

    name: ClassVar[str] = "glob_files"
    description: ClassVar[str] = (
        "Find files whose paths match a glob pattern such as '**/*.py' or 'src/*.json' ('**' matches any number of "
        "directories). Returns paths relative to the search directory, sorted."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "pattern": {"type": "string", "description": "Glob pattern, relative to the search directory."},
            "path": {"type": "string", "description": _DIRECTORY},
        },
        required=["pattern"],
    )

    async def _run(self, arguments: Arguments) -> str:
        pattern = arguments.string("pattern")
        shown = arguments.optional_string("path") or "."
        matcher = compile_glob(pattern)
        found = await asyncio.to_thread(self._glob, self.resolve(shown), shown, matcher)
        if not found:
            return f"No files found matching '{pattern}'"
        lines = [f"Found {len(found)} files matching '{pattern}':", *found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(f"... ({len(found) - MAX_GLOB_RESULTS} more not shown; narrow the pattern)")
        return "\n".join(lines)

    @staticmethod
    def _glob(base: Path, shown: str, matcher: re.Pattern[str]) -> list[str]:
        _require_directory(base, shown)
        return sorted(relative for relative, path in walk_files(base) if matcher.fullmatch(relative) and path.is_file())


@dataclass(slots=True)
class _GrepResult:
    lines: list[str] = field(default_factory=list)
    files: int = 0
    capped: str | None = None


class GrepFilesTool(BuiltInTool):
    """``grep_files``: lines matching a case-insensitive regex, as ``path:line: text``."""

    name: ClassVar[str] = "grep_files"
    description: ClassVar[str] = (
        "Search file contents for a regular expression (Python syntax, case-insensitive) and return matching lines "
        "as 'path:line: text'. Binary files and .git are skipped; results stop at 50 files or 100 matches."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "pattern": {"type": "string", "description": "Regular expression to search for (case-insensitive)."},
            "file_pattern": {
                "type": "string",
                "description": (
                    "Glob limiting which files are searched, e.g. '*.py' (without '/' it matches file names at any "
                    "depth) or 'src/**/*.ts'. Default: all files."
                ),
            },
            "path": {"type": "string", "description": _DIRECTORY + " May also be a single file."},
        },
        required=["pattern"],
    )

    async def _run(self, arguments: Arguments) -> str:
        pattern = arguments.string("pattern")
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression '{pattern}': {exc}") from exc
        file_pattern = arguments.optional_string("file_pattern")
        matcher = compile_glob(file_pattern) if file_pattern else None
        by_name = file_pattern is not None and "/" not in file_pattern.strip().strip("/")
        shown = arguments.optional_string("path") or "."
        result = await asyncio.to_thread(self._grep, self.resolve(shown), shown, regex, matcher, by_name)
        if not result.lines:
            where = f" in files matching '{file_pattern}'" if file_pattern else ""
            return f"No matches for '{pattern}'{where}"
        lines = [f"Found {len(result.lines)} matches in {result.files} files:", *result.lines]
        if result.capped:
            lines.append(f"[{result.capped}; there are more. Narrow the pattern, file_pattern or path.]")
        return "\n".join(lines)

    @staticmethod
    def _grep(
        base: Path, shown: str, regex: re.Pattern[str], matcher: re.Pattern[str] | None, by_name: bool
    ) -> _GrepResult:
        if base.is_file():
            candidates = iter([(base.name, base)])
        else:
            _require_directory(base, shown)
            candidates = walk_files(base)
        result = _GrepResult()
        for relative, path in candidates:
            if matcher is not None and not matcher.fullmatch(path.name if by_name else relative):
                continue
            if not _grep_file(path, relative, regex, result):
                break
        return result


def _grep_file(path: Path, relative: str, regex: re.Pattern[str], result: _GrepResult) -> bool:
    """Add one file's matches to ``result``; return False once a cap is reached (searching should stop)."""
    try:
        # Only regular files: opening a FIFO or a device found in the tree would block or never end.
        if not path.is_file():
            return True
        with path.open("rb") as raw:
            head = raw.read(8192)
        if looks_binary(head):
            return True
        counted = False
        with path.open(encoding=text_encoding(head), errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not regex.search(line):
                    continue
                if len(result.lines) == MAX_GREP_MATCHES:
                    result.capped = f"Stopped at {MAX_GREP_MATCHES} matches"
                    return False
                if not counted:
                    if result.files == MAX_GREP_FILES:
                        result.capped = f"Stopped at {MAX_GREP_FILES} files"
                        return False
                    result.files += 1
                    counted = True
                text = line.rstrip("\r\n")
                if len(text) > MAX_GREP_LINE:
                    text = text[:MAX_GREP_LINE] + "..."
                result.lines.append(f"{relative}:{number}: {text}")
    except OSError:
        # Unreadable files (permissions, dangling links, sockets) are skipped like binary ones.
        return True
    return True
