"""The scope an "always approve" answer covers: the tool plus the command prefixes or exact paths the request showed.

An "always" answer never covers a whole tool that the rules judge by its arguments. A shell call's scope is one
pattern per simple command of its parsed form, in order: the program (and, for programs that take a subcommand, the
subcommand) followed by ``*`` — ``echo hi`` gives ``echo *``, ``git log -3`` gives ``git log *``. A simple command is
remembered as its exact text only when a prefix would say too little about what runs: a redirection, a substitution,
a leading assignment, a program that runs other programs (``env``, ``xargs``, ``sh``, ``python``, ``find``, ...), a
program name that expands at run time, or a subcommand program whose second word is not a plain subcommand
(``git -c x=y log``). A later call is covered when one remembered scope has exactly as many patterns as the call has
simple commands and each pattern covers the simple command in its place, so ``echo *`` never covers ``echo a; rm b``
nor ``echo a && echo b``; what a ``*`` covers holds no redirection or substitution. A command line that cannot be
parsed has no scope (it is asked every time). A file tool's scope is its exact path arguments together with the
judgement they received, so the same text that later resolves elsewhere (a swapped symlink: "outside the working
directory") is asked again. Tools that the rules judge by name alone (MCP tools, web tools, ...) have their name as
the scope, as the rules do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ironhive.domain.permissions.policy import normalize_tool_name
from ironhive.ports.chat import JsonValue

SHELL_TOOLS = frozenset({"execute_command", "shell"})
PATH_TOOLS = frozenset(
    {"read_file", "write_file", "edit_file", "delete_file", "glob_files", "grep_files", "list_directory"}
)
_PATH_KEYS = ("path", "pattern", "filepattern")
# Programs whose second word picks what they do: "git status" and "git push" are different approvals.
_SUBCOMMAND_PROGRAMS = frozenset(
    {
        "apt", "apt-get", "brew", "cargo", "composer", "conda", "docker", "dotnet", "gh", "git", "go", "gradle",
        "helm", "kubectl", "make", "mvn", "npm", "pip", "pip3", "pipx", "pnpm", "poetry", "podman", "systemctl",
        "terraform", "uv", "yarn",
    }
)  # fmt: skip
# Subcommands that run whatever program or script their arguments name ("npm exec", "uv run python -c ...").
_RUNNER_SUBCOMMANDS = frozenset({"dlx", "exec", "run", "x"})
# Programs whose arguments name another program, a script or code to run: a prefix of them would cover anything.
_RUNNER_PROGRAMS = frozenset(
    {
        ".", "awk", "bash", "builtin", "busybox", "chroot", "command", "dash", "doas", "env", "eval", "exec", "fish",
        "find", "gawk", "ionice", "ksh", "mawk", "nice", "nohup", "node", "npx", "perl", "php", "pwsh", "python",
        "python3", "ruby", "sed", "setsid", "sh", "source", "ssh", "stdbuf", "strace", "su", "sudo", "time",
        "timeout", "watch", "xargs", "zsh",
    }
)  # fmt: skip
_SUBCOMMAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_PLAIN_PROGRAM = re.compile(r"[A-Za-z0-9_./+-]+")
# Text that makes a simple command more than "this program with these arguments": redirections, substitutions.
_UNSAFE_TAIL = re.compile(r"[<>`]|\$\(|\$\{")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
WILDCARD_SUFFIX = " *"


class ScopeKind(StrEnum):
    """How a scope is matched."""

    COMMANDS = "commands"
    PATHS = "paths"
    TOOL = "tool"


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalScope:
    """What one "always approve" answer covers.

    Attributes:
        tool: The tool's canonical name (``execute_command`` for ``ExecuteCommand``).
        kind: Commands (one pattern per simple command), paths (exact argument values) or the tool by name.
        patterns: For commands: ``"prog sub *"`` prefixes or exact simple commands, in order; for paths:
            ``key=value`` pairs.
        judged: For paths: the reason the rules gave (a path that later resolves elsewhere is judged differently).
    """

    tool: str
    kind: ScopeKind
    patterns: tuple[str, ...] = ()
    judged: str | None = None

    def describe(self) -> str:
        """The scope as shown to the human: ``execute_command: echo *``, ``write_file: notes.md``."""
        if self.kind is ScopeKind.TOOL:
            return f"{self.tool} (judged by name: any arguments)"
        if self.kind is ScopeKind.PATHS:
            return f"{self.tool}: " + ", ".join(pattern.split("=", 1)[1] for pattern in self.patterns)
        return f"{self.tool}: " + " ; ".join(self.patterns)


def approval_scope(
    tool_name: str, arguments: Mapping[str, JsonValue], judged: str | None = None
) -> ApprovalScope | None:
    """The scope of one asked call, or ``None`` when "always" cannot be offered for it.

    Args:
        tool_name: The tool as the model called it.
        arguments: The call's arguments.
        judged: The reason of the verdict that asked (kept for path scopes).

    Returns:
        The scope; ``None`` for a shell call that cannot be parsed or has no command, and for a file call whose path
        arguments are not plain strings.
    """
    name = normalize_tool_name(tool_name)
    if name in SHELL_TOOLS:
        parts = _command_parts(arguments)
        if not parts:
            return None
        return ApprovalScope(tool=name, kind=ScopeKind.COMMANDS, patterns=tuple(command_pattern(p) for p in parts))
    if name in PATH_TOOLS:
        pairs = _pairs(arguments, _PATH_KEYS)
        if pairs is None:
            return None
        return ApprovalScope(tool=name, kind=ScopeKind.PATHS, patterns=tuple(sorted(pairs)), judged=judged)
    return ApprovalScope(tool=name, kind=ScopeKind.TOOL)


def command_pattern(part: str) -> str:
    """The pattern remembered for one simple command: ``prog [sub] *``, or the exact text when it is not plain."""
    words = part.split(" ")
    program = words[0]
    if (
        _UNSAFE_TAIL.search(part)
        or _risky(part)
        or _ASSIGNMENT.match(program)
        or not _PLAIN_PROGRAM.fullmatch(program)
        or program.rsplit("/", 1)[-1] in _RUNNER_PROGRAMS
    ):
        return part
    if program in _SUBCOMMAND_PROGRAMS:
        if len(words) < 2 or not _SUBCOMMAND.fullmatch(words[1]) or words[1] in _RUNNER_SUBCOMMANDS:
            return part
        program = f"{program} {words[1]}"
    return program + WILDCARD_SUFFIX


def pattern_covers(pattern: str, part: str) -> bool:
    """Whether a remembered command pattern covers one simple command of a later call."""
    if not pattern.endswith(WILDCARD_SUFFIX):
        return pattern == part
    prefix = pattern.removesuffix(WILDCARD_SUFFIX)
    if part == prefix:
        return True
    if not part.startswith(prefix + " "):
        return False
    return _UNSAFE_TAIL.search(part[len(prefix) :]) is None and not _risky(part)


def _risky(part: str) -> bool:
    """Whether the rules would ask about ``part`` whatever allowed it (an option that runs or writes elsewhere, a
    write into ``.git``/``.ironhive``): such a command is only ever covered by its exact text."""
    from ironhive.domain.permissions.command_forms import command_forms
    from ironhive.domain.permissions.command_risks import unsafe_reason
    from ironhive.domain.permissions.shell import ShellParseError, parse_shell_command

    try:
        commands = parse_shell_command(part)
    except ShellParseError:
        return True
    return any(unsafe_reason(command, command_forms(command.words)) for command in commands)


def scope_covers(scope: ApprovalScope, tool_name: str, arguments: Mapping[str, JsonValue], judged: str | None) -> bool:
    """Whether one remembered scope covers a later call (judged ``judged`` by the rules).

    Args:
        scope: The remembered scope.
        tool_name: The later call's tool as the model called it.
        arguments: The later call's arguments, as they will run.
        judged: The reason of the verdict that asked about the later call.
    """
    name = normalize_tool_name(tool_name)
    if name != scope.tool:
        return False
    if scope.kind is ScopeKind.TOOL:
        return name not in SHELL_TOOLS and name not in PATH_TOOLS
    if scope.kind is ScopeKind.PATHS:
        pairs = _pairs(arguments, _PATH_KEYS) if name in PATH_TOOLS else None
        return pairs is not None and scope.judged == judged and set(pairs) <= set(scope.patterns)
    parts = _command_parts(arguments) if name in SHELL_TOOLS else None
    return _parts_covered(scope.patterns, parts or [])


class RememberedScopes:
    """The scopes approved "always" in one session; a later call is covered only within one of them."""

    def __init__(self) -> None:
        self._scopes: list[ApprovalScope] = []

    def remember(self, scope: ApprovalScope) -> None:
        """Remember one approved scope."""
        if scope not in self._scopes:
            self._scopes.append(scope)

    @property
    def scopes(self) -> tuple[ApprovalScope, ...]:
        """The remembered scopes, oldest first."""
        return tuple(self._scopes)

    def covers(self, tool_name: str, arguments: Mapping[str, JsonValue], judged: str | None = None) -> bool:
        """Whether an asked call falls inside what was approved "always".

        Args:
            tool_name: The tool as the model called it.
            arguments: The call's arguments (as they will run).
            judged: The reason of the verdict that asked.
        """
        return any(scope_covers(scope, tool_name, arguments, judged) for scope in self._scopes)


def _parts_covered(patterns: Sequence[str], parts: Sequence[str]) -> bool:
    # Position by position: a chain is covered only by a scope approved for a chain of the same shape.
    return bool(parts) and len(parts) == len(patterns) and all(map(pattern_covers, patterns, parts))


def _command_parts(arguments: Mapping[str, JsonValue]) -> list[str] | None:
    """The simple commands of every ``command`` argument, in order; ``None`` when one cannot be taken apart."""
    from ironhive.domain.permissions.shell import ShellParseError, split_shell_command  # the parser: with a command

    commands = _pairs(arguments, ("command",))
    if commands is None:
        return None
    parts: list[str] = []
    for pair in commands:
        try:
            split = split_shell_command(pair.split("=", 1)[1])
        except ShellParseError:
            return None
        if not split:
            return None
        parts.extend(split)
    return parts


def _pairs(arguments: Mapping[str, JsonValue], keys: tuple[str, ...]) -> list[str] | None:
    """``key=value`` for every non-empty value of the parameters ``keys`` (any spelling the tools accept).

    ``None`` when one of them is not a string: the rules read numbers as paths too, and such a call is simply asked.
    """
    found: list[str] = []
    for key, value in arguments.items():
        normal = key.replace("_", "").lower()
        if normal not in keys or value is None or value == "":
            continue
        if not isinstance(value, str):
            return None
        found.append(f"{normal}={value}")
    return found
