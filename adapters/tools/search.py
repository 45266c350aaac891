"""The read-only search tools: list_directory, glob_files and grep_files."""

from __future__ import annotations

import asyncio
import io
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ironhive.adapters.tools.arguments import Arguments, object_schema
from ironhive.adapters.tools.base import AllowAllReads, BuiltInTool, ReadRules, human_size, looks_binary, text_encoding
from ironhive.adapters.tools.globbing import GlobMatcher, Walk, compile_glob
from ironhive.adapters.tools.ignore_files import IGNORED_NOTE
from ironhive.adapters.tools.safe_open import open_file
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.paths import ResolvedPath
from ironhive.domain.permissions.rules import PermissionAction
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


_READ_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


_INCLUDE_IGNORED: dict[str, JsonValue] = {
    "type": "boolean",
    "default": False,
    "description": (
        "Include what .gitignore and .ignore files ignore and the built-in list (.git, node_modules, virtualenvs, "
        "__pycache__), which are left out by default."
    ),
}


def _hidden_note(count: int, what: str) -> str:
    return f"({count} {what} not shown: the read permission rules do not allow them without asking)"


def _notes(ignored: int, hidden: int, what: str) -> list[str]:
    """The lines saying what a walk left out: ignored entries and, apart, entries the read rules hide."""
    notes = []
    if ignored:
        notes.append(f"({ignored} {what} ignored {IGNORED_NOTE} left out; include_ignored=true includes them)")
    if hidden:
        notes.append(_hidden_note(hidden, what))
    return notes


class WalkingTool(BuiltInTool):
    """A tool that walks a directory tree: every entry it lists or opens is judged by the read rules.

    Args:
        root: The working directory.
        read_rules: The read rules each entry is judged by (everything is allowed without them, as for a tool used
            outside the agent).
    """

    def __init__(self, root: Path, *, read_rules: ReadRules | None = None) -> None:
        super().__init__(root)
        self._rules: ReadRules = read_rules or AllowAllReads()

    def _walk(self, base: ResolvedPath, shown: str, *, include_ignored: bool, recursive: bool = True) -> Walk:
        if not os.path.lexists(base.full):
            raise ToolError(f"Directory not found: {shown}")
        if not base.directory:
            raise ToolError(f"Not a directory: {shown}")
        return Walk(
            base=base.full,
            shown=shown,
            rules=self._rules,
            recursive=recursive,
            root=self._real_root,
            include_ignored=include_ignored,
        )


class ListDirectoryTool(WalkingTool):
    """``list_directory``: a directory's subdirectories and files (with sizes), optionally recursive."""

    name: ClassVar[str] = "list_directory"
    description: ClassVar[str] = (
        "List the subdirectories and files of a directory, with file sizes. With recursive=true, list everything "
        "below it (paths relative to it). What .gitignore/.ignore files ignore, .git, node_modules and virtualenvs "
        "are left out (counted) unless include_ignored=true."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "path": {
                "type": "string",
                "default": ".",
                "description": "Directory to list, relative to the working directory or absolute (default: '.').",
            },
            "recursive": {"type": "boolean", "default": False, "description": "List all levels below the directory."},
            "include_ignored": _INCLUDE_IGNORED,
        }
    )

    async def _run(self, arguments: Arguments) -> str:
        shown = arguments.string("path")
        base = self.resolve(shown)
        walk = self._walk(
            base, shown, include_ignored=arguments.boolean("include_ignored"), recursive=arguments.boolean("recursive")
        )
        return await asyncio.to_thread(self._list, walk, shown)

    def _list(self, walk: Walk, shown: str) -> str:
        directories: list[str] = []
        files: list[tuple[str, int]] = []
        for entry in walk.entries():
            if entry.directory:
                directories.append(entry.relative)
            else:
                files.append((entry.relative, entry.size))
        if not directories and not files:
            return " ".join([f"Directory {shown} is empty", *_notes(walk.ignored, walk.hidden, "entries")])
        directories.sort()
        files.sort()
        lines = [f"[DIR]  {name}/" for name in directories[:MAX_LISTED]]
        lines += [f"[FILE] {name} ({human_size(size)})" for name, size in files[:MAX_LISTED]]
        if len(directories) > MAX_LISTED or len(files) > MAX_LISTED:
            lines.append(
                f"... (truncated: showing {min(len(directories), MAX_LISTED)} of {len(directories)} directories "
                f"and {min(len(files), MAX_LISTED)} of {len(files)} files)"
            )
        return "\n".join([*lines, *_notes(walk.ignored, walk.hidden, "entries")])


class GlobFilesTool(WalkingTool):
    """``glob_files``: the files whose relative paths match a glob pattern, ``**`` included."""

    name: ClassVar[str] = "glob_files"
    description: ClassVar[str] = (
        "Find files whose paths match a glob pattern such as '**/*.py' or 'src/*.json' ('**' matches any number of "
        "directories, '{a,b}' either). Returns paths relative to the search directory, sorted. Ignored files "
        "(.gitignore, .ignore, .git, node_modules, virtualenvs) are left out."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "pattern": {"type": "string", "description": "Glob pattern, relative to the search directory."},
            "path": {"type": "string", "description": _DIRECTORY},
            "include_ignored": _INCLUDE_IGNORED,
        },
        required=["pattern"],
    )

    async def _run(self, arguments: Arguments) -> str:
        pattern = arguments.string("pattern")
        shown = arguments.optional_string("path") or "."
        matcher = compile_glob(pattern)
        base = self.resolve(shown)
        walk = self._walk(base, shown, include_ignored=arguments.boolean("include_ignored"))
        found = await asyncio.to_thread(self._glob, walk, matcher)
        note = _notes(walk.ignored, walk.hidden, "files or directories")
        if not found:
            return "\n".join([f"No files found matching '{pattern}'", *note])
        lines = [f"Found {len(found)} files matching '{pattern}':", *found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(f"... ({len(found) - MAX_GLOB_RESULTS} more not shown; narrow the pattern)")
        return "\n".join([*lines, *note])

    @staticmethod
    def _glob(walk: Walk, matcher: GlobMatcher) -> list[str]:
        return sorted(
            entry.relative for entry in walk.entries() if not entry.directory and matcher.matches(entry.relative)
        )


@dataclass(slots=True)
class _GrepResult:
    lines: list[str] = field(default_factory=list)
    files: int = 0
    capped: str | None = None
    hidden: int = 0
    ignored: int = 0


class GrepFilesTool(WalkingTool):
    """``grep_files``: lines matching a case-insensitive regex, as ``path:line: text``.

    Only regular files the read rules allow are searched (a link is never followed: its target is searched where it
    lies, as ripgrep does by default), each opened without following links; a hard-linked file counts as outside.
    """

    name: ClassVar[str] = "grep_files"
    description: ClassVar[str] = (
        "Search file contents for a regular expression (Python syntax, case-insensitive) and return matching lines "
        "as 'path:line: text'. Binary files and ignored files (.gitignore, .ignore, .git, node_modules, "
        "virtualenvs) are skipped; results stop at 50 files or 100 matches."
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
            "path": {
                "type": "string",
                "description": _DIRECTORY + " May also be a single file (searched even if ignored).",
            },
            "include_ignored": _INCLUDE_IGNORED,
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
        base = self.resolve(shown)
        include_ignored = arguments.boolean("include_ignored")
        result = await asyncio.to_thread(self._grep, base, shown, regex, matcher, by_name, include_ignored)
        note = _notes(result.ignored, result.hidden, "files")
        if not result.lines:
            where = f" in files matching '{file_pattern}'" if file_pattern else ""
            return "\n".join([f"No matches for '{pattern}'{where}", *note])
        lines = [f"Found {len(result.lines)} matches in {result.files} files:", *result.lines]
        if result.capped:
            lines.append(f"[{result.capped}; there are more. Narrow the pattern, file_pattern or path.]")
        return "\n".join([*lines, *note])

    def _grep(
        self,
        base: ResolvedPath,
        shown: str,
        regex: re.Pattern[str],
        matcher: GlobMatcher | None,
        by_name: bool,
        include_ignored: bool,
    ) -> _GrepResult:
        result = _GrepResult()
        if os.path.lexists(base.full) and not base.directory:
            self._grep_single(base, shown, regex, result)
            return result
        walk = self._walk(base, shown, include_ignored=include_ignored)
        for entry in walk.entries():
            if entry.directory or entry.link:
                continue
            if matcher is not None and not matcher.matches(entry.name if by_name else entry.relative):
                continue
            try:
                descriptor = os.open(entry.name, _READ_FILE, dir_fd=entry.parent)
            except OSError:
                continue  # unreadable, or swapped for a link meanwhile: skipped like a binary file
            if not _grep_file(descriptor, entry.relative, regex, result):
                break
        result.hidden += walk.hidden
        result.ignored = walk.ignored
        return result

    def _grep_single(self, base: ResolvedPath, shown: str, regex: re.Pattern[str], result: _GrepResult) -> None:
        if self._rules.judge_read(base.full) is not PermissionAction.ALLOW:
            result.hidden += 1
            return
        try:
            descriptor = open_file(base.full, _READ_FILE, shown)
        except OSError:
            return
        _grep_file(descriptor, os.path.basename(base.full), regex, result)


def _grep_file(descriptor: int, relative: str, regex: re.Pattern[str], result: _GrepResult) -> bool:
    """Add one file's matches to ``result`` and close it; return False once a cap is reached (searching should stop)."""
    try:
        status = os.fstat(descriptor)
    except OSError:
        os.close(descriptor)
        return True
    try:
        # Only regular files with this one name: a FIFO or device would block or never end, and a hard link's other
        # name may be outside the working directory.
        if not stat.S_ISREG(status.st_mode) or status.st_nlink > 1:
            os.close(descriptor)
            return True
        with io.FileIO(descriptor, "r", closefd=True) as raw:
            return _grep_lines(raw, relative, regex, result)
    except OSError:
        # Unreadable files (permissions, I/O errors) are skipped like binary ones.
        return True


def _grep_lines(raw: io.FileIO, relative: str, regex: re.Pattern[str], result: _GrepResult) -> bool:
    head = raw.read(8192)
    if looks_binary(head):
        return True
    raw.seek(0)
    counted = False
    with io.TextIOWrapper(io.BufferedReader(raw), encoding=text_encoding(head), errors="replace") as handle:
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
    return True
