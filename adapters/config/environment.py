"""The environment-variable layer: the exact variables the original reads, and ``.env`` files read by python-dotenv.

Only the variables of :data:`ENVIRONMENT_VARIABLES` count (there are no ``IRONHIVE_*`` variables). A variable
overrides only when its value is not blank. ``*_ENABLED`` variables are true only for the text ``true``
(case-insensitive); any other value turns the provider off. ``GOOGLE_API_KEY`` is an alias of ``GOOGLEAI_API_KEY``
(the latter wins when both are set).
"""

from __future__ import annotations

import io
import re
from collections import ChainMap
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
        values: Each variable's value (a later line wins), ``${VAR}`` references expanded.
        warnings: One message per statement that could not be read, naming ``file:line``.
    """

    values: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


_SINGLE_QUOTED = re.compile(r"\s*(?:export\s+)?(?:'[^']+'|[^=#\s]+)\s*=\s*'")
"""A binding whose value is in single quotes (python-dotenv's key grammar): its text is literal, never expanded."""


def parse_dotenv(text: str, source: str, environ: Mapping[str, str] | None = None) -> DotEnv:
    """Parse ``.env`` text with python-dotenv, without touching the process environment.

    python-dotenv's grammar: ``# comments``, ``[export ]NAME=value``, values bare (a `` #`` starts a comment), in
    single quotes (literal, may span lines) or double quotes (escapes such as ``\\n``, may span lines). In bare and
    double-quoted values ``${VAR}`` and ``${VAR:-default}`` expand, as ``dotenv_values`` expands them, from the
    file's earlier lines first, then from ``environ`` (not ``os.environ``, which ``dotenv_values`` would read: a
    server or the warm process hands in the environment of the run). A name alone (``NAME`` without ``=``) sets
    nothing.

    Args:
        text: The file's text.
        source: The file's name for warnings.
        environ: The variables ``${VAR}`` may refer to besides the file's own (none when omitted).

    Returns:
        The values and a warning per unreadable statement.
    """
    from dotenv.parser import parse_stream
    from dotenv.variables import parse_variables

    outside = environ if environ is not None else {}
    values: dict[str, str] = {}
    warnings: list[str] = []
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            warnings.append(f"Unreadable statement at {source}:{binding.original.line} ignored")
            continue
        if binding.key is None or binding.value is None:
            continue
        if _SINGLE_QUOTED.match(binding.original.string):
            values[binding.key] = binding.value
            continue
        scope = ChainMap(values, dict(outside))
        values[binding.key] = "".join(atom.resolve(scope) for atom in parse_variables(binding.value))
    return DotEnv(values=values, warnings=tuple(warnings))
