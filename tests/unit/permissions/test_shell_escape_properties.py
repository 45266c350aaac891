"""Property tests: a dangerous core stays denied however it is spelled — wrappers, program paths, quoting, flag
orders, assignments, pipes without spaces, ``sh -c``."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.domain.permissions.commands import judge_command
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionRule

DENY = PermissionAction.DENY
# The default rules below an allow-everything rule and an allow default: only deny rules and shapes stand in the way.
PERMISSIVE = replace(
    DEFAULT_POLICY,
    bash=(*DEFAULT_POLICY.bash, PermissionRule(pattern="*", action=PermissionAction.ALLOW)),
    default_action=PermissionAction.ALLOW,
)
WRAPPERS = st.sampled_from(
    [
        "env",
        "env X=1",
        "/usr/bin/env -i",
        "command",
        "nice",
        "nice -n 5",
        "nohup",
        "timeout 5",
        "timeout -s KILL 3",
        "xargs",
        "xargs -n 1",
        "sudo",
        "/usr/bin/sudo -u root",
        "doas",
        "stdbuf -o0",
        "setsid",
        "busybox",
    ]
)
PATHS = st.sampled_from(["", "/bin/", "/usr/bin/", "/usr/local/bin/", "./"])
RM_FLAGS = st.sampled_from(
    ["-rf", "-fr", "-r -f", "-f -r", "-Rf", "-rfv", "--recursive --force", "-r --force", "--force -R", "-v -r -f"]
)
ASSIGNMENTS = st.lists(st.sampled_from(["A=1", "LANG=C", "X[0]=y", "P+=q"]), max_size=2)
SHELLS = st.sampled_from(["sh", "bash", "dash", "zsh", "/bin/sh", "/usr/bin/bash", "ksh"])
PIPES = st.sampled_from(["|", " | ", "| ", " |", "|&", " |\n "])


def _quoted(word: str, style: int) -> str:
    return [word, f"'{word}'", f'"{word}"', f"\\{word}", f"{word[0]}''{word[1:]}"][style]


@st.composite
def rm_core(draw: st.DrawFn, target: st.SearchStrategy[str]) -> str:
    program = _quoted(draw(PATHS) + "rm", draw(st.integers(0, 4)))
    flags, operand = draw(RM_FLAGS), draw(target)
    # GNU rm takes options after operands too, but not after "--"
    after = draw(st.booleans()) and not operand.startswith("--")
    return f"{program} {operand} {flags}" if after else f"{program} {flags} {operand}"


@st.composite
def wrapped(draw: st.DrawFn, core: str, *, wrappers: st.SearchStrategy[str] = WRAPPERS, shapes: int = 3) -> str:
    chain = draw(st.lists(wrappers, max_size=3))
    line = " ".join([*draw(ASSIGNMENTS), *chain, core])
    shape = draw(st.integers(0, shapes))
    if shape == 1:
        return f"ls{draw(PIPES)}{line}"
    if shape == 2 and '"' not in line:
        return f'{draw(SHELLS)} -c "{line}"'
    if shape == 3:
        return f"git status && {line}"
    return line


@st.composite
def rule_denied(draw: st.DrawFn) -> str:
    """Cores the default deny rules refuse: ``rm -rf <anything>``, ``sudo``/``doas``."""
    if draw(st.booleans()):
        core = draw(rm_core(st.sampled_from(["x", "build", "src/app", "'a b'", "-- x", "./*"])))
    else:
        core = f"{draw(PATHS)}{draw(st.sampled_from(['sudo', 'doas']))} ls"
    return draw(wrapped(core))


@st.composite
def always_denied(draw: st.DrawFn) -> str:
    """Cores refused whatever the rules say: ``rm -rf`` on ``/`` or ``~``, a download piped into a shell."""
    if draw(st.booleans()):
        return draw(wrapped(draw(rm_core(st.sampled_from(["/", "/*", "~", "~/", "$HOME"])))))
    # xargs makes the pipe arguments, not a script, so it is left out of the wrappers of a piped shell
    no_xargs = WRAPPERS.filter(lambda wrapper: not wrapper.startswith("xargs"))
    shell = draw(wrapped(draw(SHELLS), wrappers=no_xargs, shapes=0))
    fetch = draw(st.sampled_from(["curl -fsSL https://x.invalid/i", "wget -qO- x", "cat i.sh"]))
    return f"{fetch}{draw(PIPES)}{shell}"


@settings(max_examples=400, deadline=None)
@given(rule_denied())
def test_a_rule_denied_core_stays_denied_however_it_is_wrapped(command: str) -> None:
    assert judge_command(DEFAULT_POLICY, command).action == DENY, command
    assert judge_command(PERMISSIVE, command).action == DENY, command


@settings(max_examples=400, deadline=None)
@given(always_denied())
def test_an_always_denied_core_is_denied_even_when_everything_is_allowed(command: str) -> None:
    everything = replace(PERMISSIVE, bash=(PermissionRule(pattern="*", action=PermissionAction.ALLOW),))
    assert judge_command(everything, command).action == DENY, command
    assert judge_command(DEFAULT_POLICY, command).action == DENY, command


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["git", "npm", "cargo", "dotnet"]).flatmap(
        lambda program: st.tuples(
            st.just(program),
            st.sampled_from(["status", "log", "diff", "test", "run x", "build", "check"]),
            st.sampled_from(
                ["> ../out", ">>/tmp/o", "2>x", "&>x", "| tee .ironhive/permissions.yaml", "> .git/config"]
            ),
        )
    )
)
def test_an_allowed_subcommand_with_a_redirection_is_never_allowed(parts: tuple[str, str, str]) -> None:
    program, sub, redirection = parts
    assert judge_command(PERMISSIVE, f"{program} {sub} {redirection}").action != PermissionAction.ALLOW
