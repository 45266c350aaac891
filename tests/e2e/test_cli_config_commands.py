"""``ironhive set`` / ``get`` / ``unset`` / ``config`` in the real process, with HOME and the project in tmp folders."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from ironhive.adapters.config.environment import ENVIRONMENT_VARIABLES
from tests.support.cli import run_ironhive

SECRET = "sk-abcdefghijklmnop"


class Cli:
    """Runs ``ironhive`` with a temporary HOME and project, and no configuration variable but the ones given."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()

    @property
    def global_file(self) -> Path:
        return self.home / ".ironhive" / "config.yaml"

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        blank = dict.fromkeys(ENVIRONMENT_VARIABLES, "")  # blank values are ignored: the caller's env cannot leak in
        return run_ironhive(*args, cwd=self.project, home=self.home, env={**blank, **(env or {})}, timeout=60)

    def scrub(self, text: str) -> str:
        return text.replace(str(self.root), "<tmp>")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_set_writes_only_the_global_file_and_echoes_the_value_masked(cli: Cli) -> None:
    completed = cli("set", "OpenAI.API_KEY", SECRET)
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "Set openai.apiKey = ***mnop\n", "")
    assert yaml.safe_load(cli.global_file.read_text()) == {"openai": {"apiKey": SECRET}}
    assert cli.global_file.stat().st_mode & 0o777 == 0o600
    assert cli.global_file.parent.stat().st_mode & 0o777 == 0o700
    assert not (cli.project / ".ironhive").exists()


def test_set_types_values(cli: Cli) -> None:
    outputs = [
        cli("set", "compaction.maxContextTokens", "8192").stdout,
        cli("set", "ollama.enabled", "TRUE").stdout,
        cli("set", "compaction.targetRatio", "0.5").stdout,
        cli("set", "openai.model", "4").stdout,
    ]
    assert outputs == [
        "Set compaction.maxContextTokens = 8192\n",
        "Set ollama.enabled = true\n",
        "Set compaction.targetRatio = 0.5\n",
        "Set openai.model = 4\n",
    ]
    assert yaml.safe_load(cli.global_file.read_text()) == {
        "compaction": {"maxContextTokens": 8192, "targetRatio": 0.5},
        "ollama": {"enabled": True},
        "openai": {"model": "4"},
    }


def test_set_of_an_unknown_key_writes_it_with_a_warning_and_takes_a_negative_number(cli: Cli) -> None:
    completed = cli("set", "custom.offset", "-5")
    assert completed.returncode == 0
    assert completed.stdout == "Set custom.offset = -5\n"
    assert completed.stderr == "Warning: 'custom.offset' is not a known config key; loading will ignore it.\n"
    assert yaml.safe_load(cli.global_file.read_text()) == {"custom": {"offset": -5}}


def test_set_of_an_invalid_value_writes_it_with_a_warning(cli: Cli) -> None:
    completed = cli("set", "ollama.enabled", "maybe")
    assert (completed.returncode, completed.stdout) == (0, "Set ollama.enabled = maybe\n")
    expected = (
        "Warning: invalid value for 'ollama.enabled' (Input should be a valid boolean); loading will ignore it.\n"
    )
    assert completed.stderr == expected


def test_get_one_key(cli: Cli) -> None:
    cli("set", "openai.apiKey", SECRET)
    cli("set", "openai.model", "gpt-4o-mini")
    assert cli("get", "openai.apiKey").stdout == "***mnop\n"
    assert cli("get", "openai.api_key", "--raw").stdout == f"{SECRET}\n"
    assert cli("get", "OpenAI.Model").stdout == "gpt-4o-mini\n"
    section = cli("get", "openai")
    assert section.stdout == "openai.apiKey = ***mnop\nopenai.model = gpt-4o-mini\n"


def test_get_of_a_missing_key_exits_1(cli: Cli) -> None:
    missing = cli("get", "anthropic.model")
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", "Key not found: anthropic.model\n")
    quiet = cli("get", "anthropic.model", "--raw")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (1, "", "")


def test_get_reads_only_the_global_file(cli: Cli) -> None:
    (cli.project / ".ironhive").mkdir()
    (cli.project / ".ironhive" / "config.yaml").write_text("openai:\n  model: project-model\n")
    assert cli("get", "openai.model", env={"OPENAI_MODEL": "env-model"}).returncode == 1


def test_get_everything(cli: Cli, snapshot: SnapshotAssertion) -> None:
    for key, value in [
        ("openai.apiKey", SECRET),
        ("openai.model", "gpt-4o-mini"),
        ("webSearch.tavilyApiKey", "tvly-short"),
        ("gpuStack.apiKey", "tiny"),
        ("lmsupply.enabled", "false"),
        ("skills.roots", "~/.ironhive/skills,.ironhive/skills"),
        ("compaction.targetRatio", "0.6"),
    ]:
        assert cli("set", key, value).returncode == 0
    table = cli("get")
    raw = cli("get", "--raw")
    assert (table.returncode, raw.returncode) == (0, 0)
    assert table.stdout == snapshot(name="masked")
    assert raw.stdout == snapshot(name="raw")
    assert SECRET not in table.stdout and SECRET in raw.stdout


def test_get_everything_without_a_file(cli: Cli) -> None:
    completed = cli("get")
    assert (completed.returncode, cli.scrub(completed.stdout)) == (
        0,
        "No configuration values set in <tmp>/home/.ironhive/config.yaml\n",
    )
    assert cli("get", "--raw").stdout == ""


def test_unset_exits_0_whether_or_not_the_key_was_there(cli: Cli) -> None:
    cli("set", "openai.model", "gpt-4o-mini")
    cli("set", "anthropic.model", "claude")
    removed = cli("unset", "OpenAI.Model")
    assert (removed.returncode, removed.stdout) == (0, "Removed openai.model\n")
    again = cli("unset", "openai.model")
    assert (again.returncode, again.stdout) == (0, "Key not found: openai.model\n")
    assert yaml.safe_load(cli.global_file.read_text()) == {"anthropic": {"model": "claude"}}


def test_a_malformed_global_file_is_an_error_for_set_get_and_unset(cli: Cli) -> None:
    cli.global_file.parent.mkdir()
    cli.global_file.write_text("openai: [unclosed\n")
    for args in (("set", "openai.model", "x"), ("get", "openai.model"), ("get",), ("unset", "openai")):
        completed = cli(*args)
        assert completed.returncode == 1, args
        assert cli.scrub(completed.stderr).startswith("Error: Malformed YAML in <tmp>/home/.ironhive/config.yaml:2: ")
    assert cli.global_file.read_text() == "openai: [unclosed\n"


HAND_WRITTEN = """\
# My ironhive settings (kept by hand)

openai:  # the paid provider
    apiKey: 'sk-hand-written-1234'   # from the team vault
    # the model below is the cheap one
    model: gpt-4o-mini

# local inference stays off
lmsupply:
    enabled: false
compaction:
    targetRatio: 0.5
# last line comment
"""


def test_set_and_unset_keep_comments_order_and_formatting_of_the_rest_of_the_file(cli: Cli) -> None:
    cli.global_file.parent.mkdir(mode=0o700)
    cli.global_file.write_text(HAND_WRITTEN)
    lines = HAND_WRITTEN.splitlines(keepends=True)

    assert cli("set", "openai.model", "gpt-5").returncode == 0  # an existing nested key: only its own line changes
    expected = [line.replace("gpt-4o-mini", "gpt-5") for line in lines]
    assert cli.global_file.read_text() == "".join(expected)

    assert cli("set", "openai.endpoint", "https://proxy.example/v1").returncode == 0  # a new key in a section
    expected.insert(expected.index("    model: gpt-5\n") + 1, "    endpoint: https://proxy.example/v1\n")
    assert cli.global_file.read_text() == "".join(expected)

    assert cli("set", "chatBehavior.maximumIterationsPerRequest", "7").returncode == 0  # a new nested section
    expected[-1:-1] = ["chatBehavior:\n", "    maximumIterationsPerRequest: 7\n"]
    assert cli.global_file.read_text() == "".join(expected)

    assert cli("unset", "openai.model").returncode == 0  # the comment above it stays: it may be about the section
    expected.remove("    model: gpt-5\n")
    assert cli.global_file.read_text() == "".join(expected)

    assert cli("unset", "lmsupply.enabled").returncode == 0  # the section left empty goes, the comments stay
    expected.remove("lmsupply:\n")
    expected.remove("    enabled: false\n")
    assert cli.global_file.read_text() == "".join(expected)
    assert cli.global_file.stat().st_mode & 0o777 == 0o600
    assert yaml.safe_load(cli.global_file.read_text()) == {
        "openai": {"apiKey": "sk-hand-written-1234", "endpoint": "https://proxy.example/v1"},
        "compaction": {"targetRatio": 0.5},
        "chatBehavior": {"maximumIterationsPerRequest": 7},
    }


def test_a_value_yaml_would_read_as_another_type_is_written_so_it_reads_back_as_set(cli: Cli) -> None:
    for raw in ("yes", "1:20", "on", "null"):
        assert cli("set", "openai.model", raw).returncode == 0
        assert yaml.safe_load(cli.global_file.read_text()) == {"openai": {"model": raw}}
        assert cli("get", "openai.model").stdout == f"{raw}\n"


def test_config_show_merges_every_layer(cli: Cli, snapshot: SnapshotAssertion) -> None:
    cli("set", "openai.apiKey", SECRET)
    cli("set", "openai.model", "gpt-global")
    cli("set", "lmsupply.enabled", "false")
    (cli.project / ".ironhive").mkdir()
    (cli.project / ".ironhive" / "config.yaml").write_text(
        "openai:\n  model: gpt-project\n  apikey: typo\ncompaction:\n  maxContextTokens: 65536\n"
        "  targetRatio: lots\npermissions:\n  defaultAction: deny\n"
    )
    (cli.project / ".env").write_text('XAI_MODEL="grok-dotenv"\nANTHROPIC_MODEL=claude-dotenv\n')
    assert cli("trust").returncode == 0  # every layer: the project's files count once trusted
    environment = {"ANTHROPIC_API_KEY": "an-key-123456", "ANTHROPIC_MODEL": "claude-env"}
    completed = cli("config", env=environment)
    assert completed.returncode == 0
    assert cli.scrub(completed.stdout) == snapshot(name="stdout")
    assert cli.scrub(completed.stderr) == snapshot(name="stderr")
    assert cli("config", "show", env=environment).stdout == completed.stdout
    assert SECRET not in completed.stdout and "an-key-123456" not in completed.stdout


def test_config_show_migrates_legacy_settings(cli: Cli) -> None:
    legacy = cli.home / ".ironhive" / "settings.json"
    legacy.parent.mkdir()
    legacy.write_text('{"openai": {"model": "gpt-legacy"}}')
    first = cli("config")
    assert cli.scrub(first.stderr) == (
        "Migrated legacy settings <tmp>/home/.ironhive/settings.json to <tmp>/home/.ironhive/config.yaml\n"
    )
    assert "openai.model = gpt-legacy\n" in first.stdout
    assert cli("config").stderr == ""


def test_config_path(cli: Cli, snapshot: SnapshotAssertion) -> None:
    before = cli("config", "path")
    cli("set", "openai.model", "m")
    after = cli("config", "path")
    assert (before.returncode, after.returncode) == (0, 0)
    assert cli.scrub(before.stdout) == snapshot(name="before-set")
    assert cli.scrub(after.stdout) == snapshot(name="after-set")


def test_config_with_an_unknown_action_is_a_usage_error(cli: Cli) -> None:
    completed = cli("config", "bogus")
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr.startswith('Error: Invalid value "bogus" for ACTION. Choose from: "show", "path".')
    assert 'Did you mean "show"?' in cli("config", "shw").stderr


BROKEN = "openai:\n  apiKey: sk-paid-provider-key\n  model: [gpt-4o\nlmsupply:\n  enabled: false\n"
"""The user's paid provider with a YAML syntax error (the flow list on line 3 never closes)."""


def malformed(path: Path) -> str:
    """What every surface must say about ``BROKEN`` at ``path``: the file, the line and the problem."""
    return f"Malformed YAML in {path}:4: expected ',' or ']', but got ':'"


def write_config(path: Path, text: str) -> Path:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_one_shot_with_a_malformed_user_config_exits_1_naming_file_and_line(cli: Cli, output: str) -> None:
    write_config(cli.global_file, BROKEN)
    completed = cli("-p", "hello", "--output", output)
    assert completed.returncode == 1
    assert malformed(cli.global_file) in completed.stderr + completed.stdout
    assert "local" not in (completed.stderr + completed.stdout).lower()  # no fall-back to the local model
    assert cli.global_file.read_text() == BROKEN  # nothing is rewritten


def test_a_trusted_projects_malformed_config_stops_the_run(cli: Cli) -> None:
    project_file = write_config(cli.project / ".ironhive" / "config.yaml", BROKEN)
    completed = cli("-p", "hello", env={"IRONHIVE_TRUST_PROJECT": "1"})
    assert (completed.returncode, completed.stdout) == (1, "")
    assert malformed(project_file) in completed.stderr


def test_an_untrusted_projects_malformed_config_is_a_warning_and_the_run_goes_on(cli: Cli) -> None:
    write_config(cli.global_file, "lmsupply:\n  enabled: false\n")
    project_file = write_config(cli.project / ".ironhive" / "config.yaml", BROKEN)
    completed = cli("config")
    assert completed.returncode == 0
    warning = f"Warning: {malformed(project_file)}; the file was ignored (it is not trusted, so it cannot stop a run)"
    assert warning in completed.stderr
    assert "lmsupply.enabled = false" in completed.stdout


def test_config_show_with_a_malformed_user_config_is_an_error(cli: Cli) -> None:
    write_config(cli.global_file, BROKEN)
    completed = cli("config")
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr == f"Error: {malformed(cli.global_file)}\n"


def test_unknown_keys_stay_warnings_naming_file_and_line(cli: Cli) -> None:
    write_config(cli.global_file, "lmsupply:\n  enabled: false\n\nopenai:\n  # a typo below\n  modle: gpt-4o\n")
    completed = cli("config")
    assert completed.returncode == 0
    assert f"Warning: Unknown config key 'openai.modle' in {cli.global_file}:6 ignored\n" in completed.stderr


def test_models_with_a_malformed_user_config_is_an_error_not_a_traceback(cli: Cli) -> None:
    write_config(cli.global_file, BROKEN)
    completed = cli("models")
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr == f"Error: {malformed(cli.global_file)}\n"


def test_a_run_warns_about_an_unknown_key_with_file_and_line_and_goes_on(cli: Cli) -> None:
    write_config(cli.global_file, "openai:\n  modle: gpt-4o\n")
    script = cli.root / "script.json"
    script.write_text('{"steps": [{"text": "hello back"}]}')
    completed = cli("--provider", "scripted", "-m", str(script), "-p", "hello")
    assert (completed.returncode, completed.stdout) == (0, "hello back\n")
    assert f"Warning: Unknown config key 'openai.modle' in {cli.global_file}:2 ignored\n" in completed.stderr
