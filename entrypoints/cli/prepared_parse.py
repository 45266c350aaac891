"""Command-line parsing prepared ahead of a run: argument collections built before the arguments are known.

cyclopts builds a command's argument collection (one ``Argument`` per parameter, from its signature and type hints)
anew on every parse, and a parse binds the tokens into that collection, so one collection serves one parse. The warm
process (:mod:`ironhive.daemon`) forks a process per run: what it builds before forking, each forked run receives
unused, as its own copy. :func:`prepare` builds them by parsing sample command lines once; the next parse of the same
command in that process (and in each fork of it) takes the prepared collection instead of building one. A direct run
never prepares, so it parses exactly as before.
"""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cyclopts import App, Parameter
from cyclopts.argument import ArgumentCollection

_Key = tuple[int, bool, Parameter]

_prepared: dict[_Key, ArgumentCollection] = {}
"""Unused collections by (app, ``parse_docstring``, the parameter defaults in effect): each is taken at most once."""
_recording = False


class PreparedApp(App):
    """A cyclopts :class:`~cyclopts.App` whose parse takes a prepared argument collection when there is one."""

    def assemble_argument_collection(
        self, *, default_parameter: Parameter | None = None, parse_docstring: bool = False
    ) -> ArgumentCollection:
        """The collection :func:`prepare` built for this call (taken once), else a new one, as cyclopts builds it."""
        key = (id(self), parse_docstring, Parameter.combine(self.app_stack.default_parameter, default_parameter))
        collection = _prepared.pop(key, None)
        if collection is None:
            collection = super().assemble_argument_collection(
                default_parameter=default_parameter, parse_docstring=parse_docstring
            )
        if _recording:  # built in the same context as the parse's own, so it is what the next parse would build
            _prepared[key] = super().assemble_argument_collection(
                default_parameter=default_parameter, parse_docstring=parse_docstring
            )
        return collection


def resolve_annotations(function: Callable[..., Any]) -> None:
    """Replace ``function``'s annotations (text, under ``from __future__ import annotations``) by their values.

    cyclopts reads a command's type hints several times per parse, and ``typing.get_type_hints`` evaluates every
    annotation text each time; evaluated once here, the later reads only look them up. A name that cannot be resolved
    leaves the annotations as they are (cyclopts then reports it as it would have).
    """
    with contextlib.suppress(NameError, TypeError, SyntaxError):
        function.__annotations__ = typing.get_type_hints(function, include_extras=True)


def prepare(app: App, samples: Iterable[Sequence[str]]) -> int:
    """Parse each sample command line once (running nothing) and keep, for each command parsed, an unused collection.

    Besides the collections, the parses fill the caches of cyclopts, ``typing`` and pydantic that a first parse would.

    Args:
        app: The application (a :class:`PreparedApp`, and its commands).
        samples: Command lines to parse; one that does not parse is skipped.

    Returns:
        How many collections are prepared now.
    """
    from cyclopts import CycloptsError

    global _recording
    _recording = True
    try:
        for tokens in samples:
            try:
                app.parse_args(list(tokens), exit_on_error=False, print_error=False, help_on_error=False)
            except CycloptsError:
                continue
    finally:
        _recording = False
    return len(_prepared)


def discard() -> None:
    """Drop the prepared collections (the next parses build their own)."""
    _prepared.clear()
