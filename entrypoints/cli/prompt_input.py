"""The prompt of a one-shot run: the words on the command line, standard input, or both (stdin as a ``<stdin>`` block).

Also the rule that tells a positional prompt from a mistyped command: a sentence (a word with a space in it) is a
prompt; a single word close to a command name is a mistyped command; several bare words are a prompt someone forgot
to quote. Both mistakes are usage errors (exit 2) that say what to type instead, so no model is ever asked by mistake.
"""

from __future__ import annotations

import select
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

STDIN_WAIT_SECONDS = 3.0
"""How long a prompt given on the command line waits for the first byte on a non-terminal stdin that stays open."""

STDIN_OPEN, STDIN_CLOSE = "<stdin>", "</stdin>"


class PromptInputError(Exception):
    """The command line or standard input cannot make a prompt; ``code`` is the exit code (2: usage, 1: input)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def edit_distance(first: str, second: str) -> int:
    """Insertions, deletions, substitutions and swaps of neighbours that turn ``first`` into ``second``."""
    previous2: list[int] = []
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, 1):
        current = [i]
        for j, b in enumerate(second, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == second[j - 2] and first[i - 2] == b:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def close_command(word: str, commands: Iterable[str]) -> str | None:
    """The command name ``word`` most likely misspells: one slip where either is up to four letters long, else two
    (a wrong, missing, extra or swapped letter; capitals do not count)."""
    lowered = word.lower()
    best: tuple[int, str] | None = None
    for name in commands:
        if name.startswith("-"):
            continue
        distance = edit_distance(lowered, name)
        if distance <= (1 if min(len(lowered), len(name)) <= 4 else 2) and (best is None or distance < best[0]):
            best = (distance, name)
    return None if best is None else best[1]


def positional_prompt(words: Sequence[str], commands: Iterable[str]) -> str | None:
    """The prompt the positional ``words`` of ``ironhive WORDS…`` make, or ``None`` when there are none.

    Raises:
        PromptInputError: (exit 2) the first word is close to a command name, or several words were not quoted.
    """
    if not words:
        return None
    first = words[0]
    sentence = any(character.isspace() for character in first) or not first.strip()
    if len(words) == 1 and sentence:
        return first
    suggestion = None if sentence else close_command(first, commands)
    if suggestion is not None:
        raise PromptInputError(
            f'Unknown command "{first}". Did you mean "{suggestion}"? '
            f"To send it to the model as a prompt, use: ironhive -p {_quoted(' '.join(words))}",
            2,
        )
    if len(words) == 1:
        return first
    lead = "" if sentence else f'Unknown command "{first}". '
    raise PromptInputError(f"{lead}A prompt is one argument; quote it: ironhive {_quoted(' '.join(words))}", 2)


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def with_stdin(prompt: str, piped: str) -> str:
    """``prompt`` with the piped text appended as a ``<stdin>`` block (the prompt alone when nothing was piped)."""
    body = piped.rstrip("\r\n")
    if not body.strip():
        return prompt
    return f"{prompt}\n\n{STDIN_OPEN}\n{body}\n{STDIN_CLOSE}"


def read_stdin(stream: TextIO | None, *, wait_seconds: float | None) -> str | None:
    """Standard input's text: ``""`` for a terminal (never read) or a closed stdin.

    Args:
        stream: The process's stdin (``None`` when descriptor 0 is closed).
        wait_seconds: With a prompt from the command line, how long to wait for the first byte (``None``: until
            end of input). A stdin that stays silent that long (a CI runner's open pipe) is ``None``.

    Raises:
        PromptInputError: (exit 1) the input is not text in the stream's encoding.
    """
    if stream is None:
        return ""
    try:
        if stream.isatty():
            return ""
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return ""
    if wait_seconds is not None:
        try:
            ready, _, _ = select.select([descriptor], [], [], wait_seconds)
        except (OSError, ValueError):
            ready = [descriptor]  # a stream select cannot watch (Windows): read it
        if not ready:
            return None
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is None:
            return stream.read()
        data = buffer.read()
    except OSError:
        return ""
    except UnicodeDecodeError as error:
        raise _not_text(error, stream) from None
    try:
        return str(data.decode(stream.encoding or "utf-8"))
    except UnicodeDecodeError as error:
        raise _not_text(error, stream) from None


def _not_text(error: UnicodeDecodeError, stream: TextIO) -> PromptInputError:
    return PromptInputError(
        f"Standard input is not {stream.encoding or 'utf-8'} text (byte 0x{error.object[error.start]:02x} at offset "
        f"{error.start}); pipe text, or name the file in the prompt so a tool can read it.",
        1,
    )


def one_shot_prompt(prompt: str | None, stdin: TextIO | None = None, *, warn: TextIO | None = None) -> str | None:
    """The prompt of a one-shot run: ``prompt`` with piped stdin appended, stdin alone, or ``None`` (none at all).

    Raises:
        PromptInputError: stdin is not text.
    """
    source = sys.stdin if stdin is None else stdin
    if prompt is None:
        return (read_stdin(source, wait_seconds=None) or "").strip() or None
    piped = read_stdin(source, wait_seconds=STDIN_WAIT_SECONDS)
    if piped is None:
        (warn or sys.stderr).write(
            f"Warning: nothing arrived on stdin within {STDIN_WAIT_SECONDS:g} seconds; running the prompt without it "
            "(redirect stdin from /dev/null to skip this wait).\n"
        )
        return prompt
    return with_stdin(prompt, piped)
