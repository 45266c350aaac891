"""Glob patterns for the search tools, and the directory walk that judges every entry by the read and ignore rules."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from ironhive.adapters.tools.base import ReadRules
from ironhive.adapters.tools.ignore_files import Levels, ignored_by_files, ignored_by_name, levels_above, read_level
from ironhive.adapters.tools.safe_open import open_directory
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.rules import PermissionAction


class GlobMatcher:
    """A compiled glob over ``/``-separated relative paths (see ``compile_glob``)."""

    __slots__ = ("_matcher", "pattern")

    def __init__(self, pattern: str, normalized: str) -> None:
        # Imported on first use: a run that globs nothing does not pay for it.
        from wcmatch import glob
        from wcmatch._wcparse import PatternLimitException  # raised by glob.compile, exported nowhere else

        self.pattern = pattern
        try:
            self._matcher = glob.compile(normalized, flags=glob.GLOBSTAR | glob.DOTGLOB | glob.BRACE | glob.CASE)
        except PatternLimitException:
            raise ToolError(f"Pattern '{pattern}' expands to too many patterns; use fewer braces") from None
        except ValueError as exc:
            raise ToolError(f"Invalid glob pattern '{pattern}': {exc}") from None

    def matches(self, relative: str) -> bool:
        """Whether the whole relative path matches."""
        return bool(self._matcher.match(relative))


def compile_glob(pattern: str) -> GlobMatcher:
    """Compile a glob over ``/``-separated relative paths (wcmatch, case-sensitive, names starting with ``.`` too).

    ``*`` and ``?`` stay within one path segment, ``[...]`` is a character class (``[!...]`` negated), ``{a,b}``
    expands, and a ``**`` segment matches any number of directories (zero included), so ``**/*.py`` also matches
    ``setup.py``. As the last segment ``**`` matches everything below.

    Raises:
        ToolError: The pattern is empty, absolute, climbs out of the search directory with ``..``, or is malformed.
    """
    text = pattern.strip()
    if text.startswith("/"):
        raise ToolError(f"Pattern '{pattern}' is absolute; give a relative pattern and put the directory in 'path'")
    segments = [segment for segment in text.split("/") if segment not in ("", ".")]
    if not segments:
        raise ToolError("The glob pattern is empty")
    if ".." in segments:
        raise ToolError(f"Pattern '{pattern}' climbs out of the search directory; put the directory in 'path' instead")
    return GlobMatcher(pattern, "/".join(segments))


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
    """A walk of a directory tree showing what the read rules allow and the ignore rules keep; it counts the rest.

    Regular files and links show only when the read rules allow reading them outright (a walk cannot ask); a
    directory shows, and is entered, unless the rules deny it. Unless ``include_ignored``, what the ignore files and
    the built-in list ignore (``ironhive.adapters.tools.ignore_files``) is left out first and counted in ``ignored``,
    apart from what the read rules hide (``hidden``). Directories are entered through descriptors opened with
    ``O_NOFOLLOW`` from ``/`` (``safe_open``), so the walk never follows a link, not even one swapped in while it
    runs; a link is shown (by name, when allowed) and never entered.

    Args:
        base: The canonical absolute path of the directory to walk.
        shown: How the model named it, for error messages.
        rules: The read rules.
        recursive: Walk every level below ``base``, not just its entries.
        root: The canonical working directory: its ignore files apply to a walk below it outside any git work tree.
        include_ignored: Show ignored entries too.
    """

    base: str
    shown: str
    rules: ReadRules
    recursive: bool = True
    root: str | None = None
    include_ignored: bool = False
    hidden: int = field(default=0, init=False)
    ignored: int = field(default=0, init=False)

    def entries(self) -> Iterator[WalkEntry]:
        """Every entry shown, directory by directory in name order: a directory's files, then its subdirectories.

        Raises:
            OSError: The base directory cannot be opened (missing, not a directory).
            LinkAppearedError: A link stands on the way to the base directory.
        """
        above: Levels = () if self.include_ignored else levels_above(self.base, self.root or self.base, self.rules)
        pending = [("", self.base, above)]
        first = True
        while pending:
            prefix, directory, inherited = pending.pop()
            try:
                descriptor = open_directory(directory, self.shown)
            except (OSError, ToolError):
                if first:
                    raise
                continue  # changed or vanished while walking: left out, as a link swapped in must be
            first = False
            try:
                files, subdirectories, levels = self._read_directory(descriptor, prefix, directory, inherited)
                yield from files
                yield from subdirectories
            finally:
                os.close(descriptor)
            if self.recursive:
                pending.extend(
                    (entry.relative + "/", entry.full, levels) for entry in reversed(subdirectories) if not entry.link
                )

    def _read_directory(
        self, descriptor: int, prefix: str, directory: str, inherited: Levels
    ) -> tuple[list[WalkEntry], list[WalkEntry], Levels]:
        files: list[WalkEntry] = []
        subdirectories: list[WalkEntry] = []
        with os.scandir(descriptor) as scan:
            names = sorted(entry.name for entry in scan)
        levels = inherited
        if not self.include_ignored and (".gitignore" in names or ".ignore" in names):
            levels += read_level(descriptor, directory, self.rules)
        for name in names:
            full = os.path.join(directory, name)
            try:
                status = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            link = stat.S_ISLNK(status.st_mode)
            is_directory = stat.S_ISDIR(status.st_mode)
            if not self.include_ignored and (
                (is_directory and ignored_by_name(descriptor, name))
                or ignored_by_files(levels, full, name, is_directory)
            ):
                self.ignored += 1
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
        return files, subdirectories, levels
