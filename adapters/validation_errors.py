"""One reading of plugin and permission files: their case-insensitive keys and one wording of validation errors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ironhive.domain.errors import ConfigurationError

MAX_REPORTED = 5
"""The most problems one message lists; the rest are counted (``and 3 more``)."""

TOP_LEVEL = "the top level"

Special = Callable[[ErrorDetails, str, str], str | None]
"""Words one file kind has for a problem, given the problem, where it is (``here``) and its parent (``where``);
``None`` leaves the problem to the common wording."""


def describe_validation_error(error: ValidationError, *, prefix: str = "", special: Special | None = None) -> str:
    """The problems of ``error``, at most :data:`MAX_REPORTED`, as one line: ``unknown key 'x' in plugins.a;
    plugins.a.timeoutMs: Input should be greater than 0; and 2 more``.

    Args:
        error: The validation error.
        prefix: What the validated mapping is called in the file (``permissions``); empty for the whole file.
        special: A file kind's own words for some problems (tried first).

    Returns:
        The problems joined by ``; ``.
    """
    problems: list[str] = []
    for detail in error.errors()[:MAX_REPORTED]:
        location = tuple(detail["loc"])
        here = location_text(prefix, location)
        where = location_text(prefix, location[:-1])
        worded = special(detail, here, where) if special is not None else None
        problems.append(worded if worded is not None else _common(detail, here, where))
    hidden = error.error_count() - len(problems)
    if hidden > 0:
        problems.append(f"and {hidden} more")
    return "; ".join(problems)


def location_text(prefix: str, location: Sequence[int | str]) -> str:
    """``prefix`` followed by ``.key`` for each key and ``[n]`` for each list index; :data:`TOP_LEVEL` when empty."""
    text = prefix
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or TOP_LEVEL


def kind_of(value: object) -> str:
    """What a value is, in words for an error message (``a list``, ``text``, ``empty``)."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _common(detail: ErrorDetails, here: str, where: str) -> str:
    kind = detail["type"]
    if kind == "extra_forbidden":
        return f"unknown key '{detail['loc'][-1]}' in {where}"
    if kind == "value_error":
        context = detail.get("ctx") or {}
        return f"{here}: {context.get('error', detail['msg'])}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{here} must be a mapping, not {kind_of(detail.get('input'))}"
    return f"{here}: {detail['msg']}"


def case_insensitive_keys(
    pairs: Iterable[tuple[object, object]], names: Mapping[str, str], source: str, where: str
) -> dict[str, object]:
    """The pairs keyed by their canonical names (``names`` maps a lower-case spelling to it; others stay as written).

    Raises:
        ConfigurationError: Two keys of ``where`` are one name in different case.
    """
    result: dict[str, object] = {}
    for key, value in pairs:
        name = names.get(str(key).lower(), str(key))
        if name in result:
            raise ConfigurationError(f"Invalid {source}: duplicate key '{key}' in {where} (keys are case-insensitive)")
        result[name] = value
    return result
