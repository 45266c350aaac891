"""The environment-variable layer: the exact variables the original reads, and a small ``.env`` parser.

Only the variables of :data:`ENVIRONMENT_VARIABLES` count (there are no ``IRONHIVE_*`` variables). A variable
overrides only when its value is not blank. ``*_ENABLED`` variables are true only for the text ``true``
(case-insensitive); any other value turns the provider off. ``GOOGLE_API_KEY`` is an alias of ``GOOGLEAI_API_KEY``
(the latter wins when both are set).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ironhive.adapters.provider_registry import environment_variables

ENVIRONMENT_VARIABLES: dict[str, tuple[str, str]] = environment_variables()
"""Variable → (section, key), in the order they are applied: each provider's spec declares its own."""


def environment_layer(values: Mapping[str, str]) -> dict[str, Any]:
    """The configuration tree the listed variables of ``values`` describe.

    Args:
        values: Variables and their values (the process environment or a parsed ``.env``).

    Returns:
        A tree holding only the keys whose variables are set to a non-blank value.
    """
    tree: dict[str, Any] = {}
    for variable, (section, key) in ENVIRONMENT_VARIABLES.items():
        value = values.get(variable, "").strip()
        if not value:
            continue
        tree.setdefault(section, {})[key] = value.lower() == "true" if variable.endswith("_ENABLED") else value
    return tree


@dataclass(frozen=True, kw_only=True, slots=True)
class DotEnv:
    """A parsed ``.env`` file.

    Attributes:
        values: Each variable's value (a later line wins).
        warnings: One message per line that could not be read.
    """

    values: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def parse_dotenv(text: str, source: str) -> DotEnv:
    """Parse ``.env`` text without touching the process environment.

    Accepted per line: blank lines, ``# comments``, ``[export ]NAME=value`` with the value bare (a `` #`` starts a
    comment), in single quotes (literal) or in double quotes (``\\n``, ``\\t``, ``\\"`` and ``\\\\`` escapes). A value
    cannot span lines.

    Args:
        text: The file's text.
        source: The file's name for warnings.

    Returns:
        The values and a warning per unreadable line.
    """
    values: dict[str, str] = {}
    warnings: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export ") or line.startswith("export\t"):
            line = line[len("export") :].lstrip()
        name, equals, rest = line.partition("=")
        name = name.strip()
        value = _value(rest.strip()) if equals else None
        if not _NAME.fullmatch(name) or value is None:
            warnings.append(f"Unreadable line {number} in {source} ignored")
            continue
        values[name] = value
    return DotEnv(values=values, warnings=tuple(warnings))


def _value(text: str) -> str | None:
    if not text or text[0] not in "'\"":
        return re.split(r"\s#", text, maxsplit=1)[0].rstrip()
    quote = text[0]
    characters: list[str] = []
    index = 1
    while index < len(text):
        character = text[index]
        if character == quote:
            tail = text[index + 1 :].strip()
            return "".join(characters) if not tail or tail.startswith("#") else None
        if quote == '"' and character == "\\" and index + 1 < len(text):
            following = text[index + 1]
            characters.append(_ESCAPES.get(following, "\\" + following))
            index += 2
            continue
        characters.append(character)
        index += 1
    return None  # the closing quote is missing
