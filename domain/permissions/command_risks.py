"""What makes one simple command dangerous whatever the rules say, or worth a question even when a rule allows it.

``always_denied`` recognises destruction and remote code by shape, on every normal form of a command: ``rm`` with a
recursive flag on ``/`` or ``~``, a shell fed by a pipe or a process substitution, writes to a disk device, ``mkfs``,
and the fork bomb (``is_fork_bomb``, on the whole line). ``unsafe_reason`` names what an allow rule cannot vouch for:
a redirection other than to ``/dev/null`` or a descriptor copy (``2>&1``), a write into ``.ironhive/`` or ``.git/``,
and options that run a program or write elsewhere (``git -c``, ``git log --output``, ``npm --script-shell``,
``cargo --config``, ``dotnet -p:``/``-logger:``, ``find -exec``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase

from ironhive.domain.permissions.command_forms import SHELLS, Form, option_view
from ironhive.domain.permissions.shell import Redirection, SimpleCommand

_ROOTS = frozenset({"/", "/*", "/.", "//", "~", "~/", "~/*", "$home", "$home/", "$home/*", "${home}", "${home}/"})
_DISK = re.compile(r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk)")
_FORK_BOMB = re.compile(r"(?P<name>[^\s;&|(){}<>]+)\(\)\{(?P=name)\|(?P=name)&?;?\}")
_DESCRIPTOR_COPY = re.compile(r"(?:\d*|\{\w+\})[<>]&")
_TO_DEV_NULL = re.compile(r"(?:\d*|&)(?:>|>>|>\||>&)|\d*<")
_WRITES = re.compile(r"[>]|<>")
_PROTECTED = (".ironhive", ".git")
_WRITING_PROGRAMS = frozenset(
    {
        "cp", "mv", "ln", "tee", "install", "rsync", "dd", "touch", "mkdir", "rm", "rmdir", "unlink", "truncate",
        "chmod", "chown", "chgrp", "sed", "patch", "tar", "unzip", "cd", "pushd",
    }
)  # fmt: skip

_GIT_SAFE_GLOBALS = frozenset(
    {
        "--no-pager", "-P", "--version", "--help", "-h", "--no-optional-locks", "--no-replace-objects",
        "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-advice",
    }
)  # fmt: skip
# git accepts any unambiguous prefix of a long option, so these are matched by prefix.
_GIT_LONGS = (
    "--output", "--output-directory", "--exec", "--exec-path", "--upload-pack", "--receive-pack", "--config-env",
    "--ext-diff", "--textconv", "--open-files-in-pager", "--template", "--git-dir", "--work-tree", "--extcmd",
    "--tool", "--separate-git-dir", "--remote", "--sendmail-cmd", "--smtp-server", "--run",
)  # fmt: skip
_GIT_SHORTS = {"rebase": "x", "format-patch": "o", "archive": "o", "grep": "O", "clone": "u", "ls-remote": "u",
               "difftool": "xt", "mergetool": "t"}  # fmt: skip
_GIT_RUNNERS = frozenset({"difftool", "mergetool", "filter-branch", "send-email", "instaweb", "daemon", "hook"})
_GIT_RUNNER_ACTIONS = {"bisect": "run", "submodule": "foreach"}
_GIT_PLACED = frozenset({"clone", "init", "worktree", "bundle"})
_GIT_CONFIG_WRITES = frozenset(
    {
        "--global", "--system", "--file", "-f", "--blob", "--add", "--unset", "--unset-all", "--replace-all",
        "--rename-section", "--remove-section", "--edit", "-e", "set", "unset", "rename-section", "remove-section",
        "edit",
    }
)  # fmt: skip
_GIT_CONFIG_READS = ("--get", "--list", "-l", "get", "list")
# npm reads any long option as a config key and accepts unambiguous abbreviations of them.
_NPM_LONGS = (
    "--script-shell", "--shell", "--node-options", "--userconfig", "--globalconfig", "--prefix", "--global",
    "--location", "--call", "--onload-script", "--node-gyp", "--editor", "--browser", "--viewer", "--init-module",
    "--cache", "--git",
)  # fmt: skip
_NPM_SHORTS = frozenset({"-g", "-C", "-c"})
_CARGO_OPTIONS = frozenset(
    {"--config", "--target-dir", "--manifest-path", "--out-dir", "--artifact-dir", "--root", "--lockfile-path", "-Z",
     "-C"}
)  # fmt: skip
# MSBuild switches (either dash or slash) that load code, set properties targets may run, or write files.
_DOTNET_PREFIXES = (
    "-p:", "-property:", "--property", "-l:", "-logger:", "--logger", "-bl", "-binarylogger", "-dl",
    "-distributedlogger", "-flp", "-fileloggerparameters", "-rp:", "-restoreproperty", "--results-directory",
    "--diag", "--test-adapter-path", "--settings", "--output", "@",
)  # fmt: skip
_DOTNET_SHORTS = frozenset({"-o", "-d", "-s", "-l", "-p"})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})


def is_fork_bomb(command: str) -> bool:
    """Whether the line defines a function that pipes itself into itself (``:(){ :|:& };:`` and renamings)."""
    return _FORK_BOMB.search(re.sub(r"\s+", "", command)) is not None


def always_denied(command: SimpleCommand, forms: Sequence[Form]) -> bool:
    """Whether a simple command, at any level of its forms, is one the engine refuses whatever the rules say."""
    if any(_DISK.match(redirection.target) for redirection in command.redirections if _writes(redirection)):
        return True
    reads_pipe = command.piped
    for form in forms:
        program = form[0].lower()
        letters, longs = option_view(form[1:])
        operands = [word.lower() for word in form[1:] if not word.startswith("-")]
        if program == "rm" and ("--no-preserve-root" in longs or ("r" in letters and _ROOTS.intersection(operands))):
            return True
        reads_pipe = reads_pipe and program != "xargs"  # xargs turns the pipe into arguments, not a script
        if program in SHELLS and (
            reads_pipe
            or any(word.startswith("<(") for word in form[1:])
            or any(redirection.target.startswith("<(") for redirection in command.redirections)
        ):
            return True
        if (
            program.startswith("mkfs.")
            or program == "fdisk"
            or (program == "mkfs" and any(_DISK.match(word) for word in form[1:]))
        ):
            return True
        if program == "dd" and any(_DISK.match(word.lower().removeprefix("of=")) for word in form[1:]):
            return True
    return False


def unsafe_reason(command: SimpleCommand, forms: Sequence[Form]) -> str | None:
    """Why a simple command must be asked about even when a rule allows it, or ``None``."""
    targets = [redirection.target for redirection in command.redirections if _writes(redirection)]
    for form in forms:
        if form[0].lower() in _WRITING_PROGRAMS:
            targets.extend(word for word in form[1:] if not word.startswith("-"))
    if any(_is_protected(target) for target in targets):
        return "Writes into .ironhive or .git"
    for redirection in command.redirections:
        if not _harmless(redirection):
            return f"Redirection ({redirection.operator}{redirection.target})"
    for form in forms:
        reason = _option_reason(form)
        if reason is not None:
            return reason
    return None


def _writes(redirection: Redirection) -> bool:
    return _WRITES.search(redirection.operator) is not None and not _descriptor_copy(redirection)


def _descriptor_copy(redirection: Redirection) -> bool:
    copies = _DESCRIPTOR_COPY.fullmatch(redirection.operator) is not None
    return copies and re.fullmatch(r"\d+-?|-", redirection.target) is not None


def _harmless(redirection: Redirection) -> bool:
    if _descriptor_copy(redirection):
        return True
    return bool(_TO_DEV_NULL.fullmatch(redirection.operator)) and redirection.target == "/dev/null"


def _is_protected(path: str) -> bool:
    for part in path.replace("\\", "/").lower().split("/"):
        if part in _PROTECTED:
            return True
        if any(char in part for char in "*?[") and any(fnmatchcase(name, part) for name in _PROTECTED):
            return True
        if "{" in part and part.startswith((".", "{")):
            return True  # brace expansion may spell a protected name
    return False


def _option_reason(form: Form) -> str | None:
    program = form[0].lower()
    found: str | None = None
    if program == "git":
        found = _git_option(form)
    elif program == "npm":
        found = _npm_option(form)
    elif program == "cargo":
        found = next((word for word in _before_dashes(form) if word.split("=", 1)[0] in _CARGO_OPTIONS
                      or word.startswith(("-Z", "-C"))), None)  # fmt: skip
    elif program == "dotnet":
        found = _dotnet_option(form)
    elif program == "find":
        found = next((word for word in form[1:] if word in _FIND_ACTIONS), None)
    if found is None:
        return None
    return f"Option that runs a program or writes elsewhere ({program} {found})"


def _before_dashes(form: Form) -> Form:
    return form[1 : form.index("--")] if "--" in form else form[1:]


def _long_prefix(word: str, names: Sequence[str]) -> bool:
    name = word.split("=", 1)[0].lower()
    return name.startswith("--") and len(name) > 2 and any(known.startswith(name) for known in names)


def _git_option(form: Form) -> str | None:
    index = 1
    while index < len(form) and form[index].startswith("-"):
        if form[index] not in _GIT_SAFE_GLOBALS:
            return form[index]
        index += 1
    if index >= len(form):
        return None
    sub = form[index]
    rest = form[index + 1 :]
    for word in rest:
        if _long_prefix(word, _GIT_LONGS):
            return word
        shorts = _GIT_SHORTS.get(sub, "")
        if word.startswith("-") and not word.startswith("--") and any(char in word[1:] for char in shorts):
            return word
    if sub in _GIT_RUNNERS or (sub in _GIT_RUNNER_ACTIONS and _GIT_RUNNER_ACTIONS[sub] in rest):
        return sub
    if sub in _GIT_PLACED and any(_outside(word) for word in rest if not word.startswith("-")):
        return sub
    if sub == "config" and _git_config_writes(rest):
        return "config"
    return None


def _git_config_writes(rest: Form) -> bool:
    if any(word.split("=", 1)[0] in _GIT_CONFIG_WRITES for word in rest):
        return True
    reads = any(word.startswith(_GIT_CONFIG_READS) for word in rest)
    operands = [word for word in rest if not word.startswith("-")]
    return not reads and len(operands) >= 2


def _outside(word: str) -> bool:
    return word.startswith(("/", "~", "$")) or ".." in word.replace("\\", "/").split("/")


def _npm_option(form: Form) -> str | None:
    for word in _before_dashes(form):
        if _long_prefix(word, _NPM_LONGS) or word in _NPM_SHORTS:
            return word
    return None


def _dotnet_option(form: Form) -> str | None:
    if "--" in form[1:] and form.index("--") < len(form) - 1:
        return "--"  # words after "--" are run settings (adapter paths, loggers)
    for word in form[1:]:
        lower = word.lower()
        switch = "-" + lower[1:] if lower.startswith("/") else lower
        if switch.startswith(_DOTNET_PREFIXES) or switch.split(":", 1)[0] in _DOTNET_SHORTS:
            return word
    return None
