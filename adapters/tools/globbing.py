"""Glob patterns for the search tools, and a walk of a directory tree that skips ``.git``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ironhive.adapters.tools.base import SKIPPED_DIRECTORIES
from ironhive.domain.errors import ToolError


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


def walk_files(base: Path) -> Iterator[tuple[str, Path]]:
    """Every file under ``base`` as (path relative to ``base`` with ``/``, absolute path), directory by directory.

    Directories are visited in name order and never through symbolic links (no cycles); ``.git`` is skipped.
    """
    for directory, subdirectories, filenames in os.walk(base):
        subdirectories[:] = sorted(name for name in subdirectories if name not in SKIPPED_DIRECTORIES)
        relative = os.path.relpath(directory, base)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        for filename in sorted(filenames):
            yield prefix + filename, Path(directory, filename)
