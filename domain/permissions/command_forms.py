"""Normal forms of one simple command: assignments, wrappers and program paths stripped, flags split.

A deny rule must not be dodged by spelling: ``env X=1 nice /bin/rm -r -f build`` runs ``rm -rf build``. Each level of a
simple command is one *form*: its words from the program on, the program cut to its file name. ``command_forms`` gives
the form of the command itself and of every command a wrapper (``env``, ``command``, ``nice``, ``nohup``, ``timeout``,
``xargs``, ``sudo``, ``doas``, …) runs; ``nested_scripts`` the text a form hands to a shell (``sh -c``, ``eval``,
``env -S``, ``su -c``, ``watch``) and ``nested_commands`` the commands ``find -exec`` runs, to be judged like parts.
``option_view`` splits flags (``-rf`` is ``-r -f``, ``--recursive``/``--force`` are ``-r``/``-f``, case folded as the
rules are), and ``flags_match`` matches a rule such as ``rm -rf *`` in that view: ``rm -fr x``, ``rm -r -f x`` and
``rm x --recursive --force`` all match it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ironhive.domain.permissions.evaluator import glob_matches

Form = tuple[str, ...]
"""One level of a simple command: the program's file name, then its arguments."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"})
"""Programs that run a script: fed a pipe, they run whatever came down it."""

_MAX_LEVELS = 16
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
# A long option counts as the short flag rules usually spell ("rm --recursive --force" is "rm -rf").
_LONG_ALIASES = {"--recursive": "r", "--force": "f"}
_GLOB_CHARS = frozenset("*?")


@dataclass(frozen=True, slots=True)
class _Wrapper:
    """How a wrapper's own arguments end: options taking a value, plain words to skip, assignments to skip."""

    values: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False


def _wrapper(*values: str, positionals: int = 0, assignments: bool = False) -> _Wrapper:
    return _Wrapper(frozenset(values), positionals, assignments)


_WRAPPERS: dict[str, _Wrapper] = {
    "env": _wrapper("-u", "--unset", "-C", "--chdir", "-S", "--split-string", assignments=True),
    "command": _wrapper(),
    "builtin": _wrapper(),
    "exec": _wrapper("-a"),
    "nice": _wrapper("-n", "--adjustment"),
    "nohup": _wrapper(),
    "setsid": _wrapper(),
    "unbuffer": _wrapper(),
    "busybox": _wrapper(),
    "time": _wrapper("-o", "--output", "-f", "--format"),
    "timeout": _wrapper("-s", "--signal", "-k", "--kill-after", positionals=1),
    "xargs": _wrapper(
        "-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args", "-P", "--max-procs", "-s",
        "--max-chars", "--process-slot-var",
    ),
    "sudo": _wrapper(
        "-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt",
        "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user", assignments=True,
    ),
    "doas": _wrapper("-u", "-C"),
    "stdbuf": _wrapper("-i", "-o", "-e", "--input", "--output", "--error"),
    "ionice": _wrapper("-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"),
    "chrt": _wrapper(positionals=1),
    "taskset": _wrapper(positionals=1),
    "flock": _wrapper("-w", "--timeout", "-E", "--conflict-exit-code", "-c", "--command", positionals=1),
    "chroot": _wrapper("--userspec", "--groups", positionals=1),
}  # fmt: skip
# Programs that run a command line given as one argument: the option naming it.
_SCRIPT_OPTIONS: dict[str, frozenset[str]] = {
    "su": frozenset({"-c", "--command"}),
    "flock": frozenset({"-c", "--command"}),
    "script": frozenset({"-c", "--command"}),
    "env": frozenset({"-S", "--split-string"}),
}
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def program_name(word: str) -> str:
    """The file name of a program word: ``rm`` for ``/bin/rm`` and ``./rm`` (the name a rule speaks of)."""
    name = word.rstrip("/").rsplit("/", 1)[-1]
    return name or word


def strip_assignments(words: Sequence[str]) -> tuple[str, ...]:
    """The words without leading ``NAME=value`` assignments."""
    start = 0
    while start < len(words) and _ASSIGNMENT.match(words[start]):
        start += 1
    return tuple(words[start:])


def command_forms(words: Sequence[str]) -> list[Form]:
    """Every level of a simple command: itself, and each command a wrapper in front of it runs.

    Args:
        words: The simple command's words (redirections left out).

    Returns:
        The forms, outermost first; each starts with its program's file name. Empty when there is no program.
    """
    forms: list[Form] = []
    current = strip_assignments(words)
    while current and len(forms) < _MAX_LEVELS:
        form = (program_name(current[0]), *current[1:])
        forms.append(form)
        current = _unwrap(form)
    return forms


def _unwrap(form: Form) -> tuple[str, ...]:
    """The command a wrapper runs (its words from the program on), or ``()`` when ``form`` is no wrapper."""
    spec = _WRAPPERS.get(form[0].lower())
    if spec is None:
        return ()
    positionals = spec.positionals
    index = 1
    while index < len(form):
        word = form[index]
        if word == "--":
            return form[index + 1 :]
        if word.startswith("--"):
            takes_value = "=" not in word and word in spec.values
            index += 2 if takes_value else 1
        elif word.startswith("-"):
            index += 2 if word[:2] in spec.values and len(word) == 2 else 1
        elif spec.assignments and _ASSIGNMENT.match(word):
            index += 1
        elif positionals > 0:
            positionals -= 1
            index += 1
        else:
            return form[index:]
    return ()


def nested_scripts(form: Form) -> list[str]:
    """The command lines ``form`` hands to a shell: ``sh -c 'x'``, ``eval x``, ``env -S 'x'``, ``su -c``, ``watch``."""
    program = form[0].lower()
    if program == "eval":
        return [" ".join(form[1:])] if len(form) > 1 else []
    if program == "watch":
        rest = _watch_command(form)
        return [" ".join(rest)] if rest else []
    if program in SHELLS:
        return _shell_script(form)
    options = _SCRIPT_OPTIONS.get(program)
    if options is None:
        return []
    scripts: list[str] = []
    for index, word in enumerate(form[1:], start=1):
        name, equals, value = word.partition("=")
        if name in options and word.startswith("--") and equals:
            scripts.append(value)
        elif word in options and index + 1 < len(form):
            scripts.append(" ".join(form[index + 1 :]) if program == "env" else form[index + 1])
        elif len(word) > 2 and word[:2] in options and not word.startswith("--"):
            scripts.append(word[2:])
    return scripts


def _watch_command(form: Form) -> Form:
    # watch joins the words after its options and runs them with "sh -c".
    values = frozenset({"-n", "--interval", "-q", "--equexit"})
    index = 1
    while index < len(form) and form[index].startswith("-"):
        index += 2 if form[index] in values else 1
    return form[index:]


def _shell_script(form: Form) -> list[str]:
    has_command = False
    index = 1
    while index < len(form):
        word = form[index]
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            index += 2
            continue
        if word.startswith(("-", "+")) and word not in ("-", "--"):
            has_command = has_command or (not word.startswith("--") and "c" in word[1:])
            index += 1
            continue
        if word == "--":
            index += 1
        break
    return [form[index]] if has_command and index < len(form) else []


def nested_commands(form: Form) -> list[Form]:
    """The commands ``find … -exec cmd … ;`` (``-execdir``, ``-ok``, ``-okdir``) would run."""
    if form[0].lower() != "find":
        return []
    found: list[Form] = []
    index = 1
    while index < len(form):
        if form[index] in _FIND_EXEC:
            end = index + 1
            while end < len(form) and form[end] not in (";", "+"):
                end += 1
            found.extend(command_forms(form[index + 1 : end]))
            index = end
        index += 1
    return found


def option_view(arguments: Sequence[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The short flags (one letter each, lower case) and long options (lower case, without ``=value``) given.

    Options may come in any order and after operands (GNU tools permute), up to a ``--``.
    """
    letters: set[str] = set()
    longs: set[str] = set()
    for word in arguments:
        if word == "--":
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0].lower()
            longs.add(name)
            if name in _LONG_ALIASES:
                letters.add(_LONG_ALIASES[name])
        elif word.startswith("-") and len(word) > 1:
            letters.update(word[1:].lower())
    return frozenset(letters), frozenset(longs)


def flags_match(pattern: str, form: Form) -> bool:
    """Whether a rule pattern with literal flags (``rm -rf *``, ``git push --force *``) covers ``form`` flag-wise.

    The pattern's literal options must all be given, in any order, split or combined; what is left of the command
    once they are taken out must match what is left of the pattern. A pattern without literal options never matches
    here (the plain glob over the text decides it).
    """
    tokens = pattern.split()
    if len(tokens) < 2 or not form or not glob_matches(tokens[0], form[0]):
        return False
    options = [token for token in tokens[1:] if _literal_option(token)]
    if not options:
        return False
    wanted_letters, wanted_longs = option_view(options)
    wanted_longs = frozenset(name for name in wanted_longs if name not in _LONG_ALIASES)
    letters, longs = option_view(form[1:])
    if not (wanted_letters <= letters and wanted_longs <= longs):
        return False
    rest = " ".join(token for token in tokens[1:] if not _literal_option(token))
    remaining = _without_options(form[1:], wanted_letters, wanted_longs)
    # Extra flags ("rm -rfv build") do not take a command out of a rule; the pattern may still name them itself.
    operands = [word for word in remaining if not _is_option(word)] if "--" not in remaining else remaining
    return any(glob_matches(rest, " ".join(words)) if rest else not words for words in (remaining, operands))


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _literal_option(token: str) -> bool:
    return token.startswith("-") and token not in ("-", "--") and not any(char in _GLOB_CHARS for char in token)


def _without_options(arguments: Sequence[str], letters: frozenset[str], longs: frozenset[str]) -> list[str]:
    remaining: list[str] = []
    for index, word in enumerate(arguments):
        if word == "--":
            remaining.extend(arguments[index:])
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0].lower()
            if name in longs or _LONG_ALIASES.get(name) in letters:
                continue
        elif word.startswith("-") and len(word) > 1:
            left = "".join(char for char in word[1:] if char.lower() not in letters)
            if not left:
                continue
            word = "-" + left
        remaining.append(word)
    return remaining
