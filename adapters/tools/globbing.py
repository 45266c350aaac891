"""Glob patterns for the search tools, and the walk of a directory tree that judges every entry by the read rules."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from ironhive.adapters.tools.base import SKIPPED_DIRECTORIES, ReadRules
from ironhive.adapters.tools.safe_open import open_directory
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.rules import PermissionAction


def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a glob over ``/``-separated relative paths into a regex to ``fullmatch``.

    ``*`` and ``?`` stay within one path segment, ``[...]`` is a character class, and a ``**`` segment matches any
    number of directories (zero included), so ``**/*.py`` also matches ``setup.py``. As the last segment ``**``
    matches everything below.

    Raises:
        ToolError: The pattern is empty, absolute, or climbs out of the search directory with ``..``.
    """
    text = pattern.strip()
    if text.startswith("/"):
        raise ToolError(f"Pattern '{pattern}' is absolute; give a relative pattern and put the directory in 'path'")
    segments = [segment for segment in text.split("/") if segment not in ("", ".")]
    if not segments:
        raise ToolError("The glob pattern is empty")
    if ".." in segments:
        raise ToolError(f"Pattern '{pattern}' climbs out of the search directory; put the directory in 'path' instead")
    regex = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _translate_segment(segment) + ("" if last else "/")
    return re.compile(regex, re.DOTALL)


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    index = 0
    length = len(segment)
    while index < length:
        char = segment[index]
        index += 1
        if char == "*":
            if not out or out[-1] != "[^/]*":
                out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = index
            if end < length and segment[end] == "!":
                end += 1
            if end < length and segment[end] == "]":
                end += 1
            while end < length and segment[end] != "]":
                end += 1
            if end >= length:
                out.append(re.escape(char))
                continue
            body = segment[index:end].replace("\\", "\\\\")
            index = end + 1
            if body.startswith("!"):
                out.append(f"[^/{body[1:]}]")
            else:
                # A leading "^" is a literal in glob syntax but negation in a regex class.
                out.append("[" + ("\\" + body if body.startswith("^") else body) + "]")
        else:
            out.append(re.escape(char))
    return "".join(out)


@dataclass(frozen=True, kw_only=True, slots=True)
class WalkEntry:
    """One entry a walk shows: a regular file, a directory, or a link the read rules allow (to an inside target).

    Attributes:
        relative: The path relative to the walked directory, with ``/``.
        full: The absolute path.
        name: The last component.
        parent: A descriptor of the directory holding it, valid only until the walk moves on: open the entry with
            ``dir_fd=parent`` and ``O_NOFOLLOW``.
        directory: Whether it is a directory (or a link to one).
        link: Whether it is a symbolic link.
        size: Its size in bytes (of the link's target for a link).
    """

    relative: str
    full: str
    name: str
    parent: int
    directory: bool
    link: bool
    size: int


@dataclass(slots=True)
class Walk:
    """A walk of a directory tree that shows only what the read rules allow, and counts what it left out.

    Regular files and links show only when the read rules allow reading them outright (a walk cannot ask); a
    directory shows, and is entered, unless the rules deny it. ``.git`` is skipped without being counted. Directories
    are entered through descriptors opened with ``O_NOFOLLOW`` from ``/`` (``safe_open``), so the walk never follows
    a link, not even one swapped in while it runs; a link is shown (by name, when allowed) and never entered.

    Args:
        base: The canonical absolute path of the directory to walk.
        shown: How the model named it, for error messages.
        rules: The read rules.
        recursive: Walk every level below ``base``, not just its entries.
    """

    base: str
    shown: str
    rules: ReadRules
    recursive: bool = True
    hidden: int = field(default=0, init=False)

    def entries(self) -> Iterator[WalkEntry]:
        """Every entry shown, directory by directory in name order: a directory's files, then its subdirectories.

        Raises:
            OSError: The base directory cannot be opened (missing, not a directory).
            LinkAppearedError: A link stands on the way to the base directory.
        """
        pending = [("", self.base)]
        first = True
        while pending:
            prefix, directory = pending.pop()
            try:
                descriptor = open_directory(directory, self.shown)
            except (OSError, ToolError):
                if first:
                    raise
                continue  # changed or vanished while walking: left out, as a link swapped in must be
            first = False
            try:
                files, subdirectories = self._read_directory(descriptor, prefix, directory)
                yield from files
                yield from subdirectories
            finally:
                os.close(descriptor)
            if self.recursive:
                pending.extend(
                    (entry.relative + "/", entry.full) for entry in reversed(subdirectories) if not entry.link
                )

    def _read_directory(self, descriptor: int, prefix: str, directory: str) -> tuple[list[WalkEntry], list[WalkEntry]]:
        files: list[WalkEntry] = []
        subdirectories: list[WalkEntry] = []
        with os.scandir(descriptor) as scan:
            names = sorted(entry.name for entry in scan)
        for name in names:
            full = os.path.join(directory, name)
            try:
                status = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            link = stat.S_ISLNK(status.st_mode)
            is_directory = stat.S_ISDIR(status.st_mode)
            if is_directory and name in SKIPPED_DIRECTORIES:
                continue
            action = self.rules.judge_read(full)
            if action is PermissionAction.DENY or (action is not PermissionAction.ALLOW and not is_directory):
                self.hidden += 1
                continue
            if link:
                # Allowed means its target resolved inside the working directory and may be read: stat it there.
                try:
                    status = os.stat(name, dir_fd=descriptor)
                except OSError:
                    continue  # dangling
                is_directory = stat.S_ISDIR(status.st_mode)
            entry = WalkEntry(
                relative=prefix + name,
                full=full,
                name=name,
                parent=descriptor,
                directory=is_directory,
                link=link,
                size=status.st_size,
            )
            (subdirectories if is_directory else files).append(entry)
        return files, subdirectories
