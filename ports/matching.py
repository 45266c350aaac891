"""The PathPatternMatcher port: decides whether a path rule's pattern covers a path."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class PathPatternMatcher(Protocol):
    """Matches permission path patterns (gitignore style) against paths.

    Semantics every implementation keeps: a pattern without a ``/`` (other than a trailing one) matches at any depth
    (``*.json`` covers ``a/b/c.json``), ``**`` crosses directories, a leading ``/`` anchors the pattern to the start
    of the path, and matching is case-insensitive. A pattern that covers a directory covers everything inside it.
    """

    def matches(self, pattern: str, relative_path: str) -> bool:
        """Tell whether ``pattern`` covers ``relative_path``.

        Args:
            pattern: The rule's pattern, as written in the permission configuration.
            relative_path: A POSIX path relative to the working directory, already resolved (no ``.``/``..``). A
                trailing ``/`` marks a directory. For a path outside the working directory the caller passes the
                absolute path; its leading ``/`` stands for the filesystem root, so anchored patterns such as
                ``/tmp/**`` describe it.

        Returns:
            Whether the pattern covers the path. A pattern that cannot be compiled covers nothing; it never raises.
        """
        ...
