"""Command-line hygiene and colour of the real ``ironhive``: unknown commands exit 2 with a suggestion, one error
prefix, shell completion scripts, ``--help`` examples, and no escape sequence under ``NO_COLOR``/``--plain``/a pipe
(on a pseudo-terminal and through pipes) while ``FORCE_COLOR`` and a plain terminal keep their colour."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from ironhive.adapters.provider_registry import SPECS
from tests.support.cli import run_ironhive
from tests.support.terminal import terminal

ESC = "\x1b"
TOOL_THEN_ANSWER = {
    "steps": [
        {"text": "Let me look.", "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}, "id": "c1"}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}, "id": "c2"}]},
        {"text": "There is one file."},
    ]
}
"""A tool line (dim on a terminal), a failed tool line (yellow), then the answer."""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(TOOL_THEN_ANSWER))
    return path


def on_terminal(*args: str, cwd: Path, home: Path, env: Mapping[str, str]) -> tuple[int, str]:
    """Run ``ironhive *args`` with stdin, stdout and stderr on a pseudo-terminal; its exit code and all it wrote."""
    with terminal(cwd, *args, home=home, env=env) as term:
        code = term.wait()
        return code, term.seen.decode()


COLOUR = {"NO_COLOR": ""}
"""The test environment sets ``NO_COLOR=1``; an empty value is "not set"."""


def test_text_output_on_a_terminal_is_coloured_unless_no_color_or_plain(
    tmp_path: Path, work: Path, script: Path
) -> None:
    args = ("--provider", "scripted", "-m", str(script), "-p", "What is here?")
    code, coloured = on_terminal(*args, cwd=work, home=tmp_path, env=COLOUR)
    assert code == 0 and f"{ESC}[2m→ Calling tool: list_directory{ESC}[0m" in coloured
    assert f"{ESC}[33m  read_file failed:" in coloured
    for env, flags in (({"NO_COLOR": "1"}, ()), ({"NO_COLOR": "yes"}, ()), (COLOUR, ("--plain",))):
        code, output = on_terminal(*args, *flags, cwd=work, home=tmp_path, env=env)
        assert code == 0 and "Calling tool: list_directory" in output and "There is one file." in output
        assert ESC not in output, (env, flags)


def test_a_pipe_gets_no_escape_sequence_unless_force_color(tmp_path: Path, work: Path, script: Path) -> None:
    args = ("--provider", "scripted", "-m", str(script), "-p", "What is here?")
    piped = run_ironhive(*args, cwd=work, home=tmp_path, env=COLOUR)
    assert piped.returncode == 0 and "→ Calling tool: list_directory\n" in piped.stdout
    assert ESC not in piped.stdout + piped.stderr
    forced = run_ironhive(*args, cwd=work, home=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert f"{ESC}[2m→ Calling tool: list_directory{ESC}[0m" in forced.stdout
    both = run_ironhive(*args, cwd=work, home=tmp_path, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert both.returncode == 0 and ESC not in both.stdout + both.stderr  # NO_COLOR wins, as in CPython


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("sesions", "list"),
        ("sessions", "dlete", "x"),
        ("-p", "hi", "--provider", "nope"),
        ("--bogus",),
        ("sessions", "list"),
        ("doctor",),
    ],
)
def test_help_errors_and_tables_on_a_terminal_under_no_color_have_no_escape(
    tmp_path: Path, work: Path, args: tuple[str, ...]
) -> None:
    if args == ("sessions", "list"):  # a stored session: the table is drawn
        assert run_ironhive("--provider", "scripted", "-p", "hi", cwd=work, home=tmp_path).returncode == 0
    _, output = on_terminal(*args, cwd=work, home=tmp_path, env={"NO_COLOR": "1"})
    assert output.strip() and ESC not in output


def test_help_on_a_terminal_keeps_its_colour_without_no_color(tmp_path: Path, work: Path) -> None:
    code, output = on_terminal("--help", cwd=work, home=tmp_path, env=COLOUR)
    assert code == 0 and ESC in output  # the check above can fail


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (("sesions", "list"), 'Error: Unknown command "sesions". Did you mean "sessions"?'),
        (("modles",), 'Error: Unknown command "modles". Did you mean "models"?'),
        (("mpc", "list"), 'Error: Unknown command "mpc". Did you mean "mcp"?'),
        (("mcp", "lst"), 'Error: Unknown command "lst". Did you mean "list"?'),
        (("sessions", "dlete", "x"), 'Error: Invalid value "dlete" for ACTION. Choose from: "list", "delete". Did you'),
        (("config", "shw"), 'Error: Invalid value "shw" for ACTION. Choose from: "show", "path". Did you mean "show"?'),
        (("daemon", "stp"), 'Error: Invalid value "stp" for ACTION. Choose from: "status", "stop". Did you mean'),
        (("protocol", "shema"), 'Error: Unknown command "shema". Did you mean "schema"?'),
        (("explain", "this", "repo"), 'Error: Unknown command "explain". A prompt is one argument; quote it: ironhive'),
        (
            ("trust", "list"),
            'Error: Unexpected argument "list": "ironhive trust" takes options only. Did you mean "--list"?',
        ),
        (
            ("trust", "foo"),
            'Error: Unexpected argument "foo": "ironhive trust" takes options only. See: ironhive trust',
        ),
        (("models", "foo"), 'Error: Unexpected argument "foo": "ironhive models" takes options only. To list one'),
        (
            ("models", "claude"),
            'Error: Unexpected argument "claude": "ironhive models" takes options only. To list one',
        ),
        (
            ("models", "jsn"),
            'Error: Unexpected argument "jsn": "ironhive models" takes options only. Did you mean "--json"?',
        ),
        (
            ("doctor", "x", "y"),
            'Error: Unexpected arguments "x", "y": "ironhive doctor" takes options only. See: ironhive',
        ),
    ],
)
def test_unknown_commands_exit_2_with_a_suggestion(
    tmp_path: Path, work: Path, args: tuple[str, ...], suggestion: str
) -> None:
    completed = run_ironhive(*args, cwd=work, home=tmp_path)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr.startswith(suggestion), completed.stderr
    assert completed.stderr.count("Error:") == 1 and len(completed.stderr.splitlines()) == 1


def test_a_provider_given_to_models_as_a_word_is_named_with_its_option(tmp_path: Path, work: Path) -> None:
    completed = run_ironhive("models", "claude", cwd=work, home=tmp_path)
    assert "ironhive models -p claude" in completed.stderr and "Unused Tokens" not in completed.stderr
    unknown = run_ironhive("models", "foo", cwd=work, home=tmp_path)
    assert "ironhive models -p PROVIDER" in unknown.stderr and "-p foo" not in unknown.stderr


def test_every_error_has_one_prefix(tmp_path: Path, work: Path) -> None:
    nothing = run_ironhive("-p", "hi", cwd=work, home=tmp_path, env={"LMSUPPLY_ENABLED": "false"})
    usage = run_ironhive("--bogus", cwd=work, home=tmp_path)
    for completed in (nothing, usage):
        assert completed.stderr.startswith("Error: ") and completed.stderr.count("Error") == 1, completed.stderr
        assert "│" not in completed.stderr  # a line, not a box


def test_help_shows_examples_and_every_registered_provider(tmp_path: Path, work: Path) -> None:
    completed = run_ironhive("--help", cwd=work, home=tmp_path, env={"COLUMNS": "200"})
    assert completed.returncode == 0
    assert 'ironhive "explain this repo"' in completed.stdout and "git diff | ironhive -p" in completed.stdout
    for spec in SPECS:
        assert spec.name in completed.stdout
        assert all(alias in completed.stdout for alias in spec.aliases)
    assert "completion" in completed.stdout and "--install-completion" in completed.stdout


def bash_completions(script: Path, *words: str) -> list[str]:
    """What bash completes for ``ironhive WORDS`` (the last word being the one under the cursor)."""
    program = f"source {script}; COMP_WORDS=(ironhive {' '.join(words)}); COMP_CWORD={len(words)}; _ironhive; "
    program += 'printf "%s\\n" "${COMPREPLY[@]}"'
    completed = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, check=True)
    return completed.stdout.split()


def test_completion_scripts_for_bash_zsh_and_fish(tmp_path: Path, work: Path) -> None:
    scripts = {}
    for shell in ("bash", "zsh", "fish"):
        completed = run_ironhive("completion", shell, cwd=work, home=tmp_path)
        assert completed.returncode == 0, completed.stderr
        scripts[shell] = tmp_path / f"ironhive.{shell}"
        scripts[shell].write_text(completed.stdout)
        assert all(name in completed.stdout for name in ("sessions", "models", "provider", "plain", "completion"))
        if shutil.which(shell):
            subprocess.run([shell, "-n", str(scripts[shell])], check=True, timeout=30)
    assert scripts["zsh"].read_text().startswith("#compdef ironhive")
    assert "complete -c ironhive" in scripts["fish"].read_text()
    assert bash_completions(scripts["bash"], "ses") == ["sessions"]
    assert bash_completions(scripts["bash"], "sessions", "") == ["list", "delete"]
    assert bash_completions(scripts["bash"], "--prov") == ["--provider"]
    unknown = run_ironhive("completion", "tcsh", cwd=work, home=tmp_path)
    assert unknown.returncode == 2 and unknown.stderr.startswith('Error: Invalid value "tcsh" for SHELL.')


def test_install_completion_writes_the_script_and_loads_it_from_bashrc(tmp_path: Path, work: Path) -> None:
    completed = run_ironhive("--install-completion", "--shell", "bash", cwd=work, home=tmp_path)
    assert completed.returncode == 0, completed.stderr
    installed = tmp_path / ".local" / "share" / "bash-completion" / "completions" / "ironhive"
    assert installed.read_text() == run_ironhive("completion", "bash", cwd=work, home=tmp_path).stdout
    assert str(installed) in (tmp_path / ".bashrc").read_text()
