"""A malformed config file stops a run naming file:line (never a silent fall-back to the local model), in the real
process; an untrusted project's cannot stop it; unknown keys stay warnings with their line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ironhive.adapters.config.environment import ENVIRONMENT_VARIABLES
from tests.support.cli import run_ironhive

BROKEN = "openai:\n  apiKey: sk-paid-provider-key\n  model: [gpt-4o\nlmsupply:\n  enabled: false\n"
"""The user's paid provider with a YAML syntax error (the flow list on line 3 never closes)."""


class Cli:
    """Runs ``ironhive`` with a temporary HOME and project and no provider setting but the ones given."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()

    @property
    def global_file(self) -> Path:
        return self.home / ".ironhive" / "config.yaml"

    @property
    def project_file(self) -> Path:
        return self.project / ".ironhive" / "config.yaml"

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o600)
        return path

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        blank = dict.fromkeys(ENVIRONMENT_VARIABLES, "")
        settings = {**blank, "IRONHIVE_DAEMON": "0", **(env or {})}
        return run_ironhive(*args, cwd=self.project, home=self.home, env=settings, timeout=90)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def malformed_line(path: Path) -> str:
    """What every surface must say about ``BROKEN`` at ``path``: the file, the line and the problem."""
    return f"Malformed YAML in {path}:4: expected ',' or ']', but got ':'"


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_one_shot_with_a_malformed_user_config_exits_1_naming_file_and_line(cli: Cli, output: str) -> None:
    cli.write(cli.global_file, BROKEN)
    completed = cli("-p", "hello", "--output", output)
    assert completed.returncode == 1
    assert malformed_line(cli.global_file) in completed.stderr + completed.stdout
    assert "local" not in (completed.stderr + completed.stdout).lower()  # no fall-back to the local model
    assert cli.global_file.read_text() == BROKEN  # nothing is rewritten


def test_a_trusted_projects_malformed_config_stops_the_run(cli: Cli) -> None:
    cli.write(cli.project_file, BROKEN)
    completed = cli("-p", "hello", env={"IRONHIVE_TRUST_PROJECT": "1"})
    assert completed.returncode == 1
    assert malformed_line(cli.project_file) in completed.stderr
    assert completed.stdout == ""


def test_an_untrusted_projects_malformed_config_is_a_warning_and_the_run_goes_on(cli: Cli) -> None:
    cli.write(cli.global_file, "lmsupply:\n  enabled: false\n")
    cli.write(cli.project_file, BROKEN)
    completed = cli("config")
    assert completed.returncode == 0
    warning = f"Warning: {malformed_line(cli.project_file)}; the file was ignored (it is not trusted, so it cannot"
    assert warning in completed.stderr
    assert "lmsupply.enabled = false" in completed.stdout


def test_config_show_with_a_malformed_user_config_is_an_error(cli: Cli) -> None:
    cli.write(cli.global_file, BROKEN)
    completed = cli("config")
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr == f"Error: {malformed_line(cli.global_file)}\n"


def test_doctor_reports_a_malformed_user_config_as_an_error_and_exits_non_zero(cli: Cli) -> None:
    cli.write(cli.global_file, BROKEN)
    completed = cli("doctor", "--json", env={"LMSUPPLY_ENABLED": "false"})
    assert completed.returncode == 1
    report = json.loads(completed.stdout)
    (check,) = [check for check in report["checks"] if check["name"] == "Config file"]
    assert (check["status"], check["message"]) == ("error", malformed_line(cli.global_file))


def test_unknown_keys_stay_warnings_naming_file_and_line(cli: Cli) -> None:
    cli.write(cli.global_file, "lmsupply:\n  enabled: false\n\nopenai:\n  # a typo below\n  modle: gpt-4o\n")
    completed = cli("config")
    assert completed.returncode == 0
    assert f"Warning: Unknown config key 'openai.modle' in {cli.global_file}:6 ignored\n" in completed.stderr
