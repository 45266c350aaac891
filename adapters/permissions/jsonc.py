"""Reads JSON with comments and trailing commas (any JSON5) through the json5 library; errors name line and column."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final

from ironhive.adapters.config.safe_files import JsonNestingError, check_json_nesting

_WHERE: Final = re.compile(r"^<string>:(?P<line>\d+) (?P<problem>.*?)(?: at column (?P<column>\d+))?$", re.DOTALL)


class JsoncSyntaxError(ValueError):
    """The text is not JSON with comments (nor any other JSON5).

    Attributes:
        line: The 1-based line of the problem.
        column: The 1-based column of the problem.
    """

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def load_jsonc(text: str, *, object_pairs_hook: Callable[[list[tuple[str, object]]], object] | None = None) -> object:
    """Parse JSON that may hold ``//`` and ``/* */`` comments, trailing commas and the rest of JSON5.

    Args:
        text: The document (a leading byte order mark is allowed).
        object_pairs_hook: Builds each object from its key/value pairs, in order (duplicates kept), as in ``json``.

    Returns:
        The parsed value.

    Raises:
        JsoncSyntaxError: The text is malformed; the error names the line and column.
        JsonNestingError: The text nests deeper than the configuration files' limit.
    """
    import json5  # only a JSON permission or plugin file needs it

    text = text.removeprefix("\ufeff")
    check_json_nesting(text)
    hook = None if object_pairs_hook is None else _joining_pairs(object_pairs_hook)
    try:
        return _join_surrogates(json5.loads(text, object_pairs_hook=hook))
    except RecursionError:
        # The nesting check counts brackets outside double-quoted strings; quotes inside comments can hide some.
        raise JsonNestingError(1) from None
    except ValueError as error:
        raise _syntax_error(str(error), text) from None


def _syntax_error(message: str, text: str) -> JsoncSyntaxError:
    match = _WHERE.match(message)
    if match is None:  # json5 names no position for an empty document
        return JsoncSyntaxError(_lower_first(message) if text.strip() else "the document is empty", 1, 1)
    return JsoncSyntaxError(_lower_first(match["problem"]), int(match["line"]), int(match["column"] or 1))


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _joining_pairs(hook: Callable[[list[tuple[str, object]]], object]) -> Callable[[Iterable[tuple[str, Any]]], Any]:
    return lambda pairs: hook([(_join_pair(key), _join_surrogates(value)) for key, value in pairs])


def _join_pair(text: str) -> str:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _join_surrogates(value: object) -> object:
    """json5 leaves an escaped pair (``"\\ud83d\\ude00"``) as two lone surrogates; ``json`` joins them into one
    character, and so does this (a lone surrogate stays as it is). Only plain lists and dicts are walked: what an
    ``object_pairs_hook`` built was joined when it was built."""
    if isinstance(value, str):
        return _join_pair(value)
    if type(value) is list:
        return [_join_surrogates(item) for item in value]
    if type(value) is dict:
        return {_join_pair(key): _join_surrogates(item) for key, item in value.items()}
    return value
