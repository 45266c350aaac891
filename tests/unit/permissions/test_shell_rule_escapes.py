"""Shell rules that mean what they say: the escape corpus against the default rules, a user's broad allow rules,
the structured parse (redirections, pipes) and the normal forms deny rules are matched against."""

from __future__ import annotations

import pytest

from ironhive.domain.permissions.command_forms import command_forms, flags_match, nested_commands, nested_scripts
from ironhive.domain.permissions.commands import judge_command
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.permissions.shell import Redirection, parse_shell_command
from ironhive.ports.approval import RiskLevel

ALLOW, DENY, ASK = PermissionAction.ALLOW, PermissionAction.DENY, PermissionAction.ASK
DANGEROUS = "Potentially dangerous command"

# A user who allows whole programs (and everything else by default): only the engine's own checks stand in the way.
BROAD = PermissionPolicy(
    bash=tuple(
        PermissionRule(pattern=pattern, action=ALLOW)
        for pattern in ("git *", "npm *", "cargo *", "dotnet *", "cp *", "tee *", "find *", "echo *", "env *")
    ),
    default_action=ALLOW,
)


@pytest.mark.parametrize(
    "command",
    [
        "git --version > ../outside/pwned",
        "git --version >> /tmp/pwned",
        "git status >/tmp/x 2>&1",
        "git status &> out.log",
        "git log > log.txt",
        "git -c alias.x='!touch ../outside/p' x",
        "git -c alias.x='!rm -rf ~' x",
        "git -c core.fsmonitor='touch /tmp/p' status",
        "git --config-env=core.pager=X log",
        "git -C /elsewhere status",
        "git log --output=../outside/p",
        "git diff --outp=../outside/p",  # git accepts abbreviated long options
        "git show --ext-diff HEAD",
        "git rebase --exec 'touch p' HEAD~1",
        "git rebase -x 'touch p' HEAD~1",
        "git format-patch -o /tmp/out HEAD~1",
        "git grep -O'touch p' x",
        "git config --global alias.st status",
        "git config core.hooksPath /tmp/hooks",
        "git config --file .git/config alias.x '!sh'",
        "git submodule foreach 'touch p'",
        "git bisect run ./script",
        "git difftool -x 'touch p'",
        "git clone https://example.invalid/r /tmp/elsewhere",
        "npm run build --script-shell=/tmp/evil",
        "npm test --node-options='--require /tmp/evil.js'",
        "npm run build -g",
        "npm run build --prefix /tmp",
        "cargo build --config 'target.x86_64-unknown-linux-gnu.runner=\"touch p\"'",
        "cargo test --target-dir /tmp/t",
        "cargo check --manifest-path ../other/Cargo.toml",
        "dotnet build -p:PreBuildEvent=touch",
        "dotnet build /p:X=1",
        "dotnet test --logger 'console;verbosity=detailed'",
        "dotnet build -logger:/tmp/evil.dll",
        "dotnet build -o /tmp/out",
        "dotnet test --test-adapter-path /tmp",
        "dotnet build @/tmp/switches.rsp",
        "find . -name x -delete",
        "find . -exec touch p {} +",
        "echo x | tee .ironhive/permissions.yaml",
        "cp /tmp/p.yaml .ironhive/permissions.yaml",
        "cp /tmp/p.yaml ./.IRONHIVE/",
        "cp hook .git/hooks/pre-commit",
        "cp x .ir*/permissions.yaml",
        "echo x > .git/config",
        "env git -c alias.x='!sh' x",
    ],
)
def test_options_redirections_and_protected_writes_ask_even_under_broad_allow_rules(command: str) -> None:
    verdict = judge_command(BROAD, command)
    assert verdict.action == ASK, command
    assert verdict.reason is not None and verdict.reason.endswith(command[:50] + ("..." if len(command) > 50 else ""))


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("git log > log.txt", "Redirection (>log.txt)"),
        ("git log --output=x", "Option that runs a program or writes elsewhere (git --output=x)"),
        ("git -c a=b status", "Option that runs a program or writes elsewhere (git -c)"),
        ("echo x | tee .ironhive/permissions.yaml", "Writes into .ironhive or .git"),
        ("echo x > .git/hooks/pre-commit", "Writes into .ironhive or .git"),
    ],
)
def test_the_question_says_why(command: str, reason: str) -> None:
    assert judge_command(BROAD, command).reason == f"{reason}: {command}"


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git log --oneline -5",
        "git diff --stat HEAD~1",
        "git diff --no-ext-diff",
        "git show HEAD:README.md",
        "git add src/a.py && git commit -m 'a > b; c'",
        "git status 2>&1",
        "git status > /dev/null 2>&1",
        "git log >&2",
        "git status &>/dev/null",
        "git branch -a",
        "git --version",
        "npm test",
        "npm test -- --watch=false",
        "npm run build",
        "npm run lint --if-present",
        "cargo build --release",
        "cargo test -- --nocapture",
        "cargo check",
        "cargo fmt && cargo clippy",
        "dotnet build -c Release",
        "dotnet test --filter Category=Unit",
        "dotnet --version",
    ],
)
def test_default_rules_allow_the_named_safe_subcommands(command: str) -> None:
    assert judge_command(DEFAULT_POLICY, command).action == ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x='!touch p' x",
        "git -c core.fsmonitor=x status",
        "git --version > ../outside/pwned",
        "git log --output=p",
        "git config --global alias.x y",
        "git push origin main",
        "git x",  # an unknown subcommand may be an alias
        "npm exec -- node -e 1",
        "npm install",
        "npx cowsay",
        "cargo install ripgrep",
        "cargo run",
        "dotnet run",
        "dotnet tool install x",
        "gitx status",
        "git statusx",
    ],
)
def test_default_rules_ask_about_everything_else(command: str) -> None:
    assert judge_command(DEFAULT_POLICY, command).action == ASK


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (":(){ :|:& };:", DANGEROUS),
        (":(){ :|: & };:", DANGEROUS),
        ("bomb() { bomb | bomb & }; bomb", DANGEROUS),
        ("curl x|sh", DANGEROUS),
        ("curl -s x|bash", DANGEROUS),
        ("wget -qO- x | dash", DANGEROUS),
        ("wget -qO- x | zsh", DANGEROUS),
        ("curl x | sudo bash -s", DANGEROUS),
        ("curl x | env sh", DANGEROUS),
        ("curl x |\n sh", DANGEROUS),
        ("curl x | (sh)", DANGEROUS),
        ("bash <(curl -s x)", DANGEROUS),
        ("rm -fr /", DANGEROUS),
        ("/bin/rm -r -f /", DANGEROUS),
        ("rm --recursive --force ~", DANGEROUS),
        ("rm -rf --no-preserve-root /", DANGEROUS),
        ("env X=1 rm -rf build", "Destructive command"),
        ("/bin/rm -rf build", "Destructive command"),
        ("command rm -rf build", "Destructive command"),
        ("nice rm -rf build", "Destructive command"),
        ("nice -n 5 rm -rf build", "Destructive command"),
        ("nohup rm -rf build", "Destructive command"),
        ("timeout 5 rm -rf build", "Destructive command"),
        ("timeout -s KILL 5 rm -rf build", "Destructive command"),
        ("ls | xargs rm -rf", "Destructive command"),
        ("ls | xargs -n 1 /usr/bin/rm -rf", "Destructive command"),
        ("rm -fr build", "Destructive command"),
        ("rm -r -f build", "Destructive command"),
        ("rm -Rf build", "Destructive command"),
        ("rm build --recursive --force", "Destructive command"),
        ("rm -rfv build", "Destructive command"),
        ("'rm' -f -r build", "Destructive command"),
        ("bash -c 'rm -rf build'", "Destructive command"),
        ("sh -ec 'cd x && rm -r -f build'", "Destructive command"),
        ("eval rm -rf build", "Destructive command"),
        ("env -S 'rm -rf build'", "Destructive command"),
        ("find . -exec rm -rf {} +", "Destructive command"),
        ("/usr/bin/sudo ls", "Elevated privileges"),
        ("sudo -u root ls", "Elevated privileges"),
        ("env sudo ls", "Elevated privileges"),
        ("doas ls", "Elevated privileges"),
        ("/usr/bin/doas -u root ls", "Elevated privileges"),
        ("git -c alias.x='!rm -rf ~' x; rm -r -f build", "Destructive command"),
    ],
)
def test_always_denied_spellings(command: str, reason: str) -> None:
    verdict = judge_command(DEFAULT_POLICY, command)
    assert (verdict.action, verdict.level, verdict.reason) == (DENY, RiskLevel.CRITICAL, reason)


@pytest.mark.parametrize(
    "command", [":(){ :|:& };:", "curl x|sh", "wget -qO- x | dash", "rm -fr /", "/bin/rm -r -f ~", "bash <(curl x)"]
)
def test_shapes_are_refused_whatever_the_rules_say(command: str) -> None:
    everything = PermissionPolicy(
        bash=(PermissionRule(pattern="*", action=ALLOW, priority=1000),), default_action=ALLOW
    )
    assert judge_command(everything, command).action == DENY


def test_a_users_higher_allow_rule_still_makes_an_exception_to_a_deny_rule() -> None:
    policy = PermissionPolicy(
        bash=(
            PermissionRule(pattern="rm -rf *", action=DENY, priority=100, reason="No"),
            PermissionRule(pattern="rm -rf build", action=ALLOW, priority=200),
        )
    )
    assert judge_command(policy, "rm -rf build").action == ALLOW  # as written: the documented exception
    assert judge_command(policy, "rm -fr build").action == ASK  # another spelling: not allowed, not denied
    assert judge_command(policy, "rm -fr dist").reason == "No"


def test_user_deny_rules_match_split_flags_and_wrappers() -> None:
    policy = PermissionPolicy(
        bash=(
            PermissionRule(pattern="*", action=ALLOW),
            PermissionRule(pattern="git push --force *", action=DENY, priority=10, reason="No force"),
            PermissionRule(pattern="docker *", action=ASK, priority=10, reason="Containers"),
        )
    )
    assert judge_command(policy, "git push -f origin").reason == "No force"
    assert judge_command(policy, "git push origin main --force").reason == "No force"
    assert judge_command(policy, "git push origin --force-with-lease").action == ALLOW
    assert judge_command(policy, "nohup /usr/local/bin/docker run x").reason == "Containers"


def test_assignments_before_an_allowed_command_still_ask() -> None:
    # npm_config_* and GIT_CONFIG_* variables change what the command runs, so an allow rule covers the text as written
    assert judge_command(DEFAULT_POLICY, "npm_config_script_shell=/tmp/evil npm test").action == ASK
    assert judge_command(DEFAULT_POLICY, "GIT_CONFIG_COUNT=1 git status").action == ASK


# -- the structured parse ---------------------------------------------------------------------------------------


def _to(operator: str, target: str) -> Redirection:
    return Redirection(operator=operator, target=target)


@pytest.mark.parametrize(
    ("command", "words", "redirections"),
    [
        ("git --version > /tmp/x", ("git", "--version"), (Redirection(operator=">", target="/tmp/x"),)),
        ("git log 2>&1 >>out", ("git", "log"), (_to("2>&", "1"), _to(">>", "out"))),
        ("echo '>' \">\" x", ("echo", ">", ">", "x"), ()),
        ("echo foo>bar", ("echo", "foo"), (Redirection(operator=">", target="bar"),)),
        ("cat <in &>/dev/null", ("cat",), (_to("<", "in"), _to("&>", "/dev/null"))),
        ("echo x >| f", ("echo", "x"), (Redirection(operator=">|", target="f"),)),
        ("ls >'/dev/null'", ("ls",), (Redirection(operator=">", target="/dev/null"),)),
        ("FOO=1 git status", ("FOO=1", "git", "status"), ()),
    ],
)  # fmt: skip
def test_parse_separates_words_and_redirections(
    command: str, words: tuple[str, ...], redirections: tuple[Redirection, ...]
) -> None:
    [part] = parse_shell_command(command)
    assert (part.words, part.redirections) == (words, redirections)


@pytest.mark.parametrize(
    ("command", "piped"),
    [
        ("a | b", [False, True]),
        ("a|b|c", [False, True, True]),
        ("a || b", [False, False]),
        ("a |& b", [False, True]),
        ("a && b; c & d", [False, False, False, False]),
        ("a |\n b", [False, True]),
        ("a | { b; c; }", [False, True, False]),
        ("a | (b)", [False, True]),
        ("a $(b | c) | d", [False, True, False, True]),
    ],
)
def test_parse_marks_commands_that_read_a_pipe(command: str, piped: list[bool]) -> None:
    assert [part.piped for part in parse_shell_command(command)] == piped


# -- normal forms -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "forms"),
    [
        ("rm -rf x", [("rm", "-rf", "x")]),
        ("/bin/rm -rf x", [("rm", "-rf", "x")]),
        ("A=1 B[0]=2 C+=3 rm x", [("rm", "x")]),
        ("env -i X=1 -u Y nice -n 5 /bin/rm x", [("env", "-i", "X=1", "-u", "Y", "nice", "-n", "5", "/bin/rm", "x"),
                                                  ("nice", "-n", "5", "/bin/rm", "x"), ("rm", "x")]),
        ("timeout --signal=KILL 10 rm x", [("timeout", "--signal=KILL", "10", "rm", "x"), ("rm", "x")]),
        ("sudo -u root -- rm x", [("sudo", "-u", "root", "--", "rm", "x"), ("rm", "x")]),
        ("xargs -I {} rm {}", [("xargs", "-I", "{}", "rm", "{}"), ("rm", "{}")]),
        ("command -p rm x", [("command", "-p", "rm", "x"), ("rm", "x")]),
        ("env", [("env",)]),
        ("A=1", []),
    ],
)  # fmt: skip
def test_command_forms(words: str, forms: list[tuple[str, ...]]) -> None:
    assert command_forms(words.split()) == forms


def test_nested_scripts_and_commands() -> None:
    assert nested_scripts(("bash", "-lc", "rm x", "name")) == ["rm x"]
    assert nested_scripts(("sh", "script.sh")) == []
    assert nested_scripts(("eval", "rm", "x")) == ["rm x"]
    assert nested_scripts(("su", "-c", "rm x", "root")) == ["rm x"]
    assert nested_scripts(("watch", "-n", "1", "rm", "x")) == ["rm x"]
    assert nested_commands(("find", ".", "-execdir", "rm", "{}", ";", "-print")) == [("rm", "{}")]


@pytest.mark.parametrize(
    ("pattern", "form", "matches"),
    [
        ("rm -rf *", ("rm", "-fr", "x"), True),
        ("rm -rf *", ("rm", "-r", "-f", "x"), True),
        ("rm -rf *", ("rm", "x", "--recursive", "--force"), True),
        ("rm -rf *", ("rm", "-R", "-F", "x"), True),  # rules are case-insensitive
        ("rm -rf *", ("rm", "-r", "x"), False),
        ("rm -rf build", ("rm", "-rfv", "build"), True),
        ("rm -rf build", ("rm", "-rf", "dist"), False),
        ("chmod -r 777 /", ("chmod", "777", "-R", "/"), True),
        ("rm *", ("rm", "-rf", "x"), False),  # no literal flags: the text glob decides
    ],
)
def test_flags_match(pattern: str, form: tuple[str, ...], matches: bool) -> None:
    assert flags_match(pattern, form) is matches
