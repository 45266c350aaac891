"""Ignore rules for the walking tools: ``.gitignore`` files as git reads them, ``.ignore`` files and a built-in list.

Git's rules, which the walk follows: each directory's ``.gitignore`` holds patterns relative to that directory; for a
path, the deepest directory whose file has a pattern matching it decides, and within one file the last matching
pattern wins (``!`` re-includes). A pattern without a ``/`` (a trailing one aside) matches the name at any depth, one
with a ``/`` matches the path from its file's directory, a trailing ``/`` matches directories only. An ignored
directory is not entered, so nothing below it can be re-included. ``.git/info/exclude`` counts below every
``.gitignore``; a ``.ignore`` file (as ripgrep reads it) counts above the ``.gitignore`` beside it. The wildcard
matching itself (``*``, ``?``, ``[...]``, ``**``) is wcmatch's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ironhive.adapters.tools.base import ReadRules
from ironhive.adapters.tools.safe_open import open_directory
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.rules import PermissionAction

BUILT_IN_IGNORED = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"})
"""Directory names ignored without any ignore file; a directory holding a ``pyvenv.cfg`` (a virtualenv) is too."""
IGNORE_FILES = (".gitignore", ".ignore")
"""The ignore files read in each directory, lowest precedence first."""
IGNORED_NOTE = "by .gitignore, .ignore or the built-in list (.git, node_modules, virtualenvs, __pycache__)"
"""What the tools name as the reason an entry was left out as ignored."""

_MAX_IGNORE_FILE = 1024 * 1024
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class IgnorePattern:
    """One pattern line of an ignore file.

    Attributes:
        text: The line as written.
        negated: A ``!`` line: a match re-includes the path.
        directory_only: The line ended with ``/``: it matches directories only.
        anchored: The pattern holds a ``/``: it matches the path from the file's directory, not just the name.
        match: Matches the path (anchored) or the name (not anchored).
    """

    text: str
    negated: bool
    directory_only: bool
    anchored: bool
    match: Callable[[str], bool]

    def matches(self, relative: str, name: str, directory: bool) -> bool:
        """Whether the pattern matches this path itself (relative to its file's directory, ``/``-separated)."""
        if self.directory_only and not directory:
            return False
        return self.match(relative if self.anchored else name)


def parse_ignore_lines(text: str) -> tuple[IgnorePattern, ...]:
    """The patterns of an ignore file's text, in order; comments, blank lines and broken patterns are left out."""
    patterns: list[IgnorePattern] = []
    for line in text.split("\n"):
        pattern = _parse_line(line.removesuffix("\r"))
        if pattern is not None:
            patterns.append(pattern)
    return tuple(patterns)


def _parse_line(line: str) -> IgnorePattern | None:
    body = _strip_trailing_spaces(line)
    if not body or body.startswith("#"):
        return None
    negated = body.startswith("!")
    if negated:
        body = body[1:]
    directory_only = body.endswith("/")
    body = body.rstrip("/") if directory_only else body
    anchored = "/" in body
    body = body.removeprefix("/")
    if not body:
        return None
    if body.startswith(("\\!", "\\#")):
        body = body[1:]  # an escaped first character is that character
    from wcmatch import fnmatch, glob  # imported on first use: a run that walks nothing does not pay for it

    try:
        if anchored:
            matcher = glob.compile(body, flags=glob.GLOBSTAR | glob.DOTGLOB | glob.CASE)
            match: Callable[[str], bool] = matcher.match
        else:
            name_matcher = fnmatch.compile(body, flags=fnmatch.DOTMATCH | fnmatch.CASE)
            match = name_matcher.match
    except ValueError:
        return None  # git skips a pattern it cannot use, too
    return IgnorePattern(text=line, negated=negated, directory_only=directory_only, anchored=anchored, match=match)


def _strip_trailing_spaces(line: str) -> str:
    """Git drops trailing spaces unless the last one is escaped with a backslash."""
    end = len(line)
    while end and line[end - 1] == " ":
        if end >= 2 and line[end - 2] == "\\":
            break
        end -= 1
    return line[:end]


@dataclass(frozen=True, slots=True)
class IgnoreLevel:
    """The patterns that apply below one directory (its ignore files', in precedence order).

    Attributes:
        directory: The canonical absolute directory the patterns are relative to.
        patterns: Its patterns, lowest precedence first.
    """

    directory: str
    patterns: tuple[IgnorePattern, ...]

    def decide(self, full: str, name: str, directory: bool) -> bool | None:
        """True (ignored) or False (re-included) by the last pattern matching ``full``, or None when none does."""
        prefix = self.directory.rstrip("/") + "/"
        relative = full[len(prefix) :] if full.startswith(prefix) else name
        for pattern in reversed(self.patterns):
            if pattern.matches(relative, name, directory):
                return not pattern.negated
        return None


Levels = tuple[IgnoreLevel, ...]


def ignored_by_files(levels: Sequence[IgnoreLevel], full: str, name: str, directory: bool) -> bool:
    """Whether the ignore files of ``levels`` (shallowest first) ignore the path ``full`` itself.

    The deepest level with a matching pattern decides, as git's per-directory files do.
    """
    for level in reversed(levels):
        decision = level.decide(full, name, directory)
        if decision is not None:
            return decision
    return False


def ignored_by_name(parent: int, name: str) -> bool:
    """Whether the directory ``name`` in the open directory ``parent`` is on the built-in list or is a virtualenv."""
    if name in BUILT_IN_IGNORED:
        return True
    try:
        descriptor = os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.stat("pyvenv.cfg", dir_fd=descriptor, follow_symlinks=False).st_mode)
    except OSError:
        return False
    finally:
        os.close(descriptor)


def read_level(
    descriptor: int, directory: str, rules: ReadRules, *, names: Sequence[str] = IGNORE_FILES, applies_to: str = ""
) -> Levels:
    """The ignore level of an open directory: its ignore files that the read rules allow, as one level (or none).

    Each file is opened relative to the directory without following a link (as git, which ignores a symbolic link
    named ``.gitignore``); one that cannot be read counts as absent.

    Args:
        descriptor: The open directory.
        directory: Its canonical absolute path.
        rules: The read rules each ignore file is judged by.
        names: The ignore files to read, lowest precedence first.
        applies_to: The directory the patterns are relative to, when not ``directory`` (``.git/info/exclude``).
    """
    patterns: list[IgnorePattern] = []
    for name in names:
        full = os.path.join(directory, name)
        if rules.judge_read(full) is not PermissionAction.ALLOW:
            continue
        text = _read_small(descriptor, name)
        if text is not None:
            patterns.extend(parse_ignore_lines(text))
    return (IgnoreLevel(directory=applies_to or directory, patterns=tuple(patterns)),) if patterns else ()


def _read_small(parent: int, name: str) -> str | None:
    try:
        descriptor = os.open(name, _READ, dir_fd=parent)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(_MAX_IGNORE_FILE)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return data.decode("utf-8", errors="replace")


def levels_above(base: str, root: str, rules: ReadRules) -> Levels:
    """The ignore levels that apply to a walk of ``base`` from the directories above it.

    They are read from the top of the git work tree holding ``base`` (else from ``root``, the working directory, when
    ``base`` is inside it) down to ``base``'s parent, with the repository's ``.git/info/exclude`` lowest. A walk
    named explicitly inside an ignored directory (``node_modules/pkg``) is what was asked for: the levels above it
    are then dropped, and only the ignore files from ``base`` down apply.

    Args:
        base: The canonical absolute directory to walk.
        root: The canonical absolute working directory.
        rules: The read rules each ignore file is judged by.
    """
    top = _work_tree_top(base)
    chain = _chain(top if top is not None else root, base)
    if chain is None:
        return ()
    levels: Levels = ()
    if top is not None:
        levels = _read_at(os.path.join(top, ".git", "info"), rules, ("exclude",), applies_to=top)
    for index, directory in enumerate(chain):
        if index and (
            os.path.basename(directory) in BUILT_IN_IGNORED
            or ignored_by_files(levels, directory, os.path.basename(directory), True)
        ):
            return ()
        if directory != base:
            levels += _read_at(directory, rules, IGNORE_FILES)
    return levels


def _work_tree_top(base: str) -> str | None:
    directory = base
    while True:
        if os.path.lexists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _chain(top: str, base: str) -> list[str] | None:
    """``top``, each directory on the way down to ``base``, and ``base``; None when ``base`` is not below ``top``."""
    if base == top:
        return [base]
    prefix = top.rstrip("/") + "/"
    if not base.startswith(prefix):
        return None
    chain = [top]
    for part in base[len(prefix) :].split("/"):
        chain.append(os.path.join(chain[-1], part))
    return chain


def _read_at(directory: str, rules: ReadRules, names: Sequence[str], *, applies_to: str = "") -> Levels:
    try:
        descriptor = open_directory(directory, directory)
    except (OSError, ToolError):
        return ()
    try:
        return read_level(descriptor, directory, rules, names=names, applies_to=applies_to)
    finally:
        os.close(descriptor)
