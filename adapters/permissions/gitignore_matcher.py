"""GitIgnorePathMatcher: the PathPatternMatcher port implemented with pathspec's gitignore patterns."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

_CACHE_LIMIT = 2048


class GitIgnorePathMatcher:
    """Matches permission path patterns with Git's own wildmatch rules (via ``pathspec.GitIgnoreSpec``).

    Both pattern and path are lowercased first, which makes matching case-insensitive. Compiled patterns are cached
    per instance; a pattern that does not compile (``\\`` alone, ``[z-a]``) is cached as matching nothing. pathspec
    is imported at the first pattern compiled (about 20 ms): a run whose tools check no path rule never needs it.
    """

    def __init__(self) -> None:
        """Create a matcher with an empty pattern cache."""
        self._compiled: dict[str, GitIgnoreSpec | None] = {}

    def matches(self, pattern: str, relative_path: str) -> bool:
        """Tell whether ``pattern`` covers ``relative_path`` (see ``PathPatternMatcher.matches``).

        Args:
            pattern: A gitignore-style pattern.
            relative_path: A resolved POSIX path; a trailing ``/`` marks a directory, a leading ``/`` the filesystem
                root.

        Returns:
            Whether the pattern covers the path.
        """
        spec = self._spec(pattern)
        path = relative_path.lower().lstrip("/")
        if spec is None or not path:
            return False
        return bool(spec.match_file(path))

    @staticmethod
    def compile_error(pattern: str) -> str | None:
        """Explain why ``pattern`` is not a usable gitignore pattern, or return ``None`` when it is.

        Args:
            pattern: The pattern to check.

        Returns:
            A short description of the problem, or ``None``.
        """
        if not pattern.strip():
            return "the pattern is empty"
        if pattern.startswith(("!", "#")):
            # In a one-line gitignore spec a negation or a comment covers nothing: the rule would silently never apply.
            return "a path pattern cannot start with '!' or '#' (escape it as '\\!' or '\\#')"
        from pathspec import GitIgnoreSpec

        try:
            GitIgnoreSpec.from_lines([pattern.lower()])
        except (ValueError, re.error) as error:
            return str(error)
        return None

    def _spec(self, pattern: str) -> GitIgnoreSpec | None:
        if pattern in self._compiled:
            return self._compiled[pattern]
        from pathspec import GitIgnoreSpec

        spec: GitIgnoreSpec | None
        try:
            spec = GitIgnoreSpec.from_lines([pattern.lower()])
        except (ValueError, re.error):
            spec = None
        if len(self._compiled) >= _CACHE_LIMIT:
            # Patterns come from configuration, so the cache only fills when fed arbitrary text; start over then.
            self._compiled.clear()
        self._compiled[pattern] = spec
        return spec
