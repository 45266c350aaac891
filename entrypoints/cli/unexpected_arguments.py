"""The error of a command given words it does not take (``ironhive trust list``): what to type instead, exit 2."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence

EXIT_USAGE = 2


def unexpected_arguments(command: Sequence[str], words: Sequence[str], options: Iterable[str], hint: str = "") -> str:
    """One error line for ``ironhive COMMAND WORDS…`` where COMMAND takes no such words.

    The option the first word most likely misspells (``list`` for ``--list``) is suggested; else ``hint`` (a
    command's own advice) when given; the line ends with where the command's usage is.
    """
    from ironhive.cli.prompt_input import close_command

    name = " ".join(("ironhive", *command))
    shown = ", ".join(f'"{word}"' for word in words)
    plural = "s" if len(words) > 1 else ""
    line = f'Unexpected argument{plural} {shown}: "{name}" takes options only.'
    flags = {option.lstrip("-"): option for option in options if option.startswith("--") and "--no-" not in option}
    close = close_command(words[0].lstrip("-"), flags) if words else None
    if close is not None:
        line += f' Did you mean "{flags[close]}"?'
    elif hint:
        line += f" {hint}"
    return f"{line} See: {shlex.join([*name.split(), '--help'])}"
