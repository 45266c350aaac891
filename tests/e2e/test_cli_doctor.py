"""``ironhive doctor`` in the real process, with HOME and the project in temporary folders and loopback providers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from ironhive.adapters.config.environment import ENVIRONMENT_VARIABLES
from ironhive.providers import local_inference_available
from tests.adapters.test_llamacpp_worker import CRASH_ON_LOAD, fake_llama_cpp
from tests.support.anthropic_server import LoopbackAnthropicServer
from tests.support.cli import run_ironhive
from tests.support.gemini_server import LoopbackGeminiServer
from tests.support.openai_server import LoopbackOpenAIServer

SERVERS = Path(__file__).resolve().parents[1] / "support" / "mcp_servers"
SECRET = "sk-doctor-secret-123456"

local_inference = pytest.mark.skipif(not local_inference_available(), reason="needs the `local` extra")


class Doctor:
    """Runs ``ironhive doctor`` with a temporary HOME and project and no provider setting but the ones given."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()

    @property
    def config_dir(self) -> Path:
        return self.home / ".ironhive"

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return self.ironhive("doctor", *args, env=env)

    def ironhive(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        blank = dict.fromkeys([*ENVIRONMENT_VARIABLES, "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"], "")
        return run_ironhive(*args, cwd=self.project, home=self.home, env={**blank, **(env or {})}, timeout=60)

    def json(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, dict[str, object]]:
        """Exit code, scrubbed JSON text and the parsed report of ``doctor --json``."""
        completed = self("--json", *args, env=env)
        assert completed.stderr == ""
        return completed.returncode, self.scrub(completed.stdout), json.loads(completed.stdout)

    def scrub(self, text: str) -> str:
        text = text.replace(str(self.root), "<tmp>")
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)


@pytest.fixture
def doctor(tmp_path: Path) -> Doctor:
    return Doctor(tmp_path)


def checks_of(report: dict[str, object], category: str) -> list[dict[str, object]]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return [check for check in checks if check["category"] == category]


def named(report: dict[str, object], name: str, category: str | None = None) -> dict[str, object]:
    checks = report["checks"]
    assert isinstance(checks, list)
    (found,) = [check for check in checks if check["name"] == name and category in (None, check["category"])]
    assert isinstance(found, dict)
    return found


@local_inference
@pytest.mark.local_model  # doctor loads the bundled model and generates a few tokens
def test_an_empty_setup_uses_local_inference_only_as_a_pass(doctor: Doctor, snapshot: SnapshotAssertion) -> None:
    code, text, report = doctor.json()
    assert code == 0
    assert text == snapshot
    selection = named(report, "Selection")
    assert (selection["status"], selection["message"]) == ("pass", "Using local inference only (lmsupply)")
    assert "not a problem" in str(selection["hint"])
    assert named(report, "Global config file")["status"] == "warning"
    assert report["summary"] == {"pass": 9, "warning": 1, "error": 0}


@local_inference
def test_a_local_model_that_crashes_is_a_failed_check_with_the_setting(doctor: Doctor) -> None:
    # llama.cpp's stand-in segfaults while loading, in the worker process; doctor itself finishes and reports it.
    site = fake_llama_cpp(doctor.root / "site", CRASH_ON_LOAD)
    code, _, report = doctor.json(env={"PYTHONPATH": str(site)})
    assert code == 1
    local = named(report, "lmsupply (local)", "Connectivity")
    assert local["status"] == "error"
    assert "SIGSEGV" in str(local["message"]) and "while loading the model" in str(local["message"])
    assert "lmsupply.extraBufferTypes: false" in str(local["hint"])
    assert report["summary"]["error"] == 1

    completed = doctor(env={"PYTHONPATH": str(site)})
    assert completed.returncode == 1
    assert "  ERROR  lmsupply (local): The local model crashed: " in completed.stdout
    assert "Hint: Set lmsupply.extraBufferTypes: false in config.yaml" in completed.stdout
    assert re.search(r"\nSummary: \d+ passed, \d+ warnings?, 1 error\n\Z", completed.stdout)


def test_no_provider_with_local_inference_off_is_an_error(doctor: Doctor, snapshot: SnapshotAssertion) -> None:
    code, text, report = doctor.json(env={"LMSUPPLY_ENABLED": "false"})
    assert code == 1
    assert text == snapshot
    selection = named(report, "Selection")
    assert selection["status"] == "error"
    assert selection["message"] == "No provider configured, and local inference is off (lmsupply.enabled: false)"


def test_plain_text_lists_checks_with_hints_and_a_summary(doctor: Doctor) -> None:
    completed = doctor(env={"LMSUPPLY_ENABLED": "false"})
    assert completed.returncode == 1
    text = doctor.scrub(completed.stdout)
    assert text.startswith(
        "Configuration\n"
        "  WARN   Global config file: Not found: <tmp>/home/.ironhive/config.yaml\n"
        "         Hint: Run `ironhive doctor --fix` to create it, or set a value with `ironhive set <key> <value>`.\n"
    )
    assert "\nProviders\n  ERROR  Selection: No provider configured, and local inference is off" in text
    assert text.endswith("Summary: 7 passed, 1 warning, 1 error\n")


def test_fix_creates_the_config_directory_and_file_and_a_rerun_passes(doctor: Doctor) -> None:
    environment = {"LMSUPPLY_ENABLED": "false", "OPENAI_API_KEY": SECRET}
    code, _, report = doctor.json("--fix", env=environment)
    assert report["fixes"] == [
        f"Created {doctor.config_dir} (mode 0700)",
        f"Created {doctor.config_dir / 'config.yaml'} (mode 0600)",
    ]
    assert doctor.config_dir.stat().st_mode & 0o777 == 0o700
    config_file = doctor.config_dir / "config.yaml"
    assert config_file.stat().st_mode & 0o777 == 0o600
    assert config_file.read_text().startswith("# ironhive configuration.")
    assert named(report, "Global config file")["status"] == "pass"
    assert code == 1  # the key without a model is no provider: fixing files cannot change that
    again = doctor("--fix", "--json", env=environment)
    assert json.loads(again.stdout)["fixes"] == []
    assert doctor.ironhive("config").stderr == ""  # the commented file loads without a warning


def test_fix_migrates_legacy_settings(doctor: Doctor, snapshot: SnapshotAssertion) -> None:
    doctor.config_dir.mkdir(mode=0o700)
    legacy = doctor.config_dir / "settings.json"
    legacy.write_text(json.dumps({"openai": {"model": "gpt-legacy"}, "lmsupply": {"enabled": False}}))
    code, text, report = doctor.json("--fix")
    assert text == snapshot
    assert report["fixes"] == [f"Migrated legacy settings {legacy} to {doctor.config_dir / 'config.yaml'}"]
    assert (doctor.config_dir / "config.yaml").stat().st_mode & 0o777 == 0o600
    configuration = checks_of(report, "Configuration")
    assert [check["status"] for check in configuration] == ["pass"] * len(configuration)
    assert code == 1  # a model without a key is no provider, and local inference is off


def test_fix_restricts_the_files_holding_secrets(doctor: Doctor, snapshot: SnapshotAssertion) -> None:
    doctor.config_dir.mkdir(mode=0o700)
    global_file = doctor.config_dir / "config.yaml"
    global_file.write_text(f"openai:\n  apiKey: {SECRET}\n  model: gpt-test\n  endpoint: http://127.0.0.1:9/v1\n")
    global_file.chmod(0o644)
    dotenv = doctor.project / ".env"
    dotenv.write_text(f"export ANTHROPIC_API_KEY='{SECRET}'\n")
    dotenv.chmod(0o640)
    public = doctor.project / ".ironhive" / "config.yaml"
    public.parent.mkdir()
    public.write_text("compaction:\n  targetRatio: 0.6\n")  # holds no secret: it may stay readable
    public.chmod(0o644)
    assert doctor.ironhive("trust").returncode == 0  # the project's .env key counts once the project is trusted

    before = doctor.json(env={"LMSUPPLY_ENABLED": "false"})[2]
    permissions = named(before, "File permissions")
    assert permissions["status"] == "warning"
    assert permissions["message"] == (f"Holding secrets but readable by others: {global_file} (0644), {dotenv} (0640)")
    assert before["fixes"] == []

    code, text, report = doctor.json("--fix", env={"LMSUPPLY_ENABLED": "false"})
    assert text == snapshot
    assert report["fixes"] == [
        f"Restricted {global_file} to its owner (mode 0600)",
        f"Restricted {dotenv} to its owner (mode 0600)",
    ]
    assert (global_file.stat().st_mode & 0o777, dotenv.stat().st_mode & 0o777) == (0o600, 0o600)
    assert public.stat().st_mode & 0o777 == 0o644
    configuration = checks_of(report, "Configuration")
    assert [check["status"] for check in configuration] == ["pass"] * len(configuration)
    assert code == 1  # nothing listens on port 9: connectivity fails, and says so
    assert SECRET not in text


def test_config_warnings_and_an_invalid_permission_file(doctor: Doctor, snapshot: SnapshotAssertion) -> None:
    doctor.config_dir.mkdir(mode=0o700)
    (doctor.config_dir / "config.yaml").write_text("openai:\n  modle: gpt-typo\nlmsupply:\n  enabled: false\n")
    (doctor.config_dir / "config.yaml").chmod(0o600)  # owner-only as ironhive writes it: about the warnings only
    project_config = doctor.project / ".ironhive"
    project_config.mkdir()
    (project_config / "config.yaml").write_text("openai: [unclosed\n")
    (project_config / "permissions.yaml").write_text("permissions:\n  bash:\n    - pattern: '*'\n      action: maybe\n")
    assert doctor.ironhive("trust").returncode == 0  # about broken files, not about trust
    code, text, report = doctor.json()
    assert code == 1
    assert text == snapshot
    warnings = [check for check in checks_of(report, "Configuration") if check["status"] == "warning"]
    assert [check["name"] for check in warnings] == ["Config warning"]
    global_file = doctor.config_dir / "config.yaml"
    assert str(warnings[0]["message"]) == f"Unknown config key 'openai.modle' in {global_file}:2 ignored"
    broken = named(report, "Config file")  # the trusted project's malformed file stops every run: an error
    assert broken["status"] == "error"
    assert str(broken["message"]).startswith(f"Malformed YAML in {project_config / 'config.yaml'}:2: ")
    assert named(report, "Permission policy")["status"] == "error"


def test_a_malformed_user_config_is_an_error_and_doctor_exits_non_zero(doctor: Doctor) -> None:
    doctor.config_dir.mkdir(mode=0o700)
    config = doctor.config_dir / "config.yaml"
    config.write_text("openai:\n  apiKey: sk-paid\n  model: [gpt-4o\nlmsupply:\n  enabled: false\n")
    config.chmod(0o600)
    code, _, report = doctor.json(env={"LMSUPPLY_ENABLED": "false"})
    assert code == 1
    check = named(report, "Config file")
    message = f"Malformed YAML in {config}:4: expected ',' or ']', but got ':'"
    assert (check["status"], check["message"]) == ("error", message)


def test_partly_configured_providers_are_warnings_naming_the_missing_key(
    doctor: Doctor, snapshot: SnapshotAssertion
) -> None:
    environment = {
        "OPENAI_API_KEY": SECRET,
        "GOOGLEAI_MODEL": "gemini-test",
        "OLLAMA_ENABLED": "true",
        "OLLAMA_ENDPOINT": "http://127.0.0.1:9",
        "LMSUPPLY_ENABLED": "false",
    }
    code, text, report = doctor.json(env=environment)
    assert text == snapshot
    openai_check = named(report, "openai")
    assert (openai_check["status"], openai_check["message"]) == ("warning", "Model not specified")
    google = named(report, "google")
    assert (google["message"], google["hint"]) == ("API key not set", "Set `ironhive set googleai.apiKey <key>`.")
    assert named(report, "ollama", "Providers")["message"] == "Model not specified (endpoint http://127.0.0.1:9)"
    assert code == 1  # ollama is enabled, so it is asked for its models, and nothing listens on port 9
    assert SECRET not in text


def test_connectivity_lists_the_models_of_the_first_three_providers(
    doctor: Doctor, snapshot: SnapshotAssertion
) -> None:
    with (
        LoopbackOpenAIServer(models=("gpt-test", "gpt-other"), api_key=SECRET) as openai_server,
        LoopbackAnthropicServer(api_key="an-" + SECRET) as anthropic_server,
        LoopbackGeminiServer(api_key="go-" + SECRET) as gemini_server,
    ):
        doctor.config_dir.mkdir(mode=0o700)
        (doctor.config_dir / "config.yaml").write_text(f"anthropic:\n  endpoint: {anthropic_server.base_url}/v1\n")
        (doctor.config_dir / "config.yaml").chmod(0o600)
        environment = {
            "OPENAI_API_KEY": SECRET,
            "OPENAI_MODEL": "gpt-test",
            "OPENAI_ENDPOINT": openai_server.base_url,
            "ANTHROPIC_API_KEY": "an-" + SECRET,
            "ANTHROPIC_MODEL": "claude-missing",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # anthropic.endpoint wins, as it does for a run
            "GOOGLEAI_API_KEY": "go-" + SECRET,
            "GOOGLEAI_MODEL": "gemini-test",
            "GOOGLE_GEMINI_BASE_URL": gemini_server.base_url,
            "XAI_API_KEY": "xai-key",
            "XAI_MODEL": "grok-test",
            "LMSUPPLY_ENABLED": "false",
        }
        code, text, report = doctor.json(env=environment)
    assert code == 0
    assert text == snapshot
    assert named(report, "openai", "Providers")["status"] == "pass"
    connectivity = {check["name"]: check["message"] for check in checks_of(report, "Connectivity")}
    assert connectivity == {
        "openai": "Reachable; lists 2 models, including the configured 'gpt-test'",
        "anthropic": "Reachable; lists 2 models, not including the configured 'claude-missing'",
        "google": "Reachable; lists 1 model, including the configured 'gemini-test'",
        "Other providers": "Not asked: xai (doctor asks the first 3 providers)",
    }


def test_connectivity_failures_name_the_provider_and_the_reason_never_the_key(
    doctor: Doctor, snapshot: SnapshotAssertion
) -> None:
    with (
        LoopbackAnthropicServer(api_key="an-the-right-key") as anthropic_server,
        LoopbackGeminiServer(api_key="go-the-right-key") as gemini_server,
    ):
        environment = {
            "OPENAI_API_KEY": SECRET,
            "OPENAI_MODEL": "gpt-test",
            "OPENAI_ENDPOINT": "http://127.0.0.1:9/v1",
            "ANTHROPIC_API_KEY": SECRET,
            "ANTHROPIC_MODEL": "claude-test",
            "ANTHROPIC_BASE_URL": anthropic_server.base_url,
            "GOOGLEAI_API_KEY": SECRET,
            "GOOGLEAI_MODEL": "gemini-test",
            "GOOGLE_GEMINI_BASE_URL": gemini_server.base_url,
            "LMSUPPLY_ENABLED": "false",
        }
        code, text, report = doctor.json(env=environment)
    assert code == 1
    assert text == snapshot
    assert named(report, "openai", "Providers")["status"] == "pass"
    failures = {check["name"]: check for check in checks_of(report, "Connectivity") if check["status"] == "error"}
    assert list(failures) == ["openai", "anthropic", "google"]
    assert "Connection refused" in str(failures["openai"]["message"])
    assert "HTTP 401" in str(failures["anthropic"]["message"])
    assert "invalid x-api-key" in str(failures["anthropic"]["message"])
    assert failures["anthropic"]["hint"] == "Check anthropic.apiKey (`ironhive get anthropic.apiKey` shows it masked)."
    assert "HTTP 400" in str(failures["google"]["message"])
    assert failures["google"]["hint"] == "Check googleai.apiKey (`ironhive get googleai.apiKey` shows it masked)."
    assert SECRET not in text


def test_mcp_plugins_start_when_trusted_and_untrusted_ones_never_run(
    doctor: Doctor, snapshot: SnapshotAssertion
) -> None:
    marker = doctor.root / "untrusted-started"
    doctor.config_dir.mkdir()
    (doctor.config_dir / "plugins.yaml").write_text(
        "plugins:\n"
        "  tools:\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    arguments: [{json.dumps(str(SERVERS / 'failing_server.py'))}]\n"
        "  remote: {url: 'http://127.0.0.1:9/mcp', timeoutMs: 2000}\n"
    )
    (doctor.project / ".ironhive").mkdir()
    (doctor.project / ".ironhive" / "plugins.yaml").write_text(
        "plugins:\n"
        "  sneaky:\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    arguments: [{json.dumps(str(SERVERS / 'failing_server.py'))}]\n"
        f"    environment: {{MCP_TEST_MARKER: {json.dumps(str(marker))}}}\n"
    )
    code, text, report = doctor.json("--verbose", env={"LMSUPPLY_ENABLED": "false", "OPENAI_API_KEY": ""})
    assert not marker.exists()
    mcp = {check["name"]: (check["status"], check["message"]) for check in checks_of(report, "MCP")}
    assert mcp["Global plugin file"][0] == "pass"
    assert mcp["Project plugin file"][0] == "warning"
    assert "its plugins do not start: sneaky" in str(mcp["Project plugin file"][1])
    assert mcp["Plugin tools"][0] == "pass"
    assert str(mcp["Plugin tools"][1]).startswith("Started (stdio); ")
    assert "fail" in str(mcp["Plugin tools"][1])  # --verbose lists the tools
    assert mcp["Plugin remote"][0] == "error"
    assert "Plugin sneaky" not in mcp
    assert code == 1
    project_file = named(report, "Project plugin file")
    trust = f"ironhive mcp trust {doctor.project / '.ironhive' / 'plugins.yaml'}"
    assert project_file["hint"] == f"Review it, then run `ironhive trust` (or `{trust}`)."
    assert json.dumps(checks_of(json.loads(text), "MCP"), indent=2) == snapshot


def test_environment_warns_without_git_and_verbose_tells_whether_the_project_is_a_repository(doctor: Doctor) -> None:
    empty_path = doctor.root / "bin"
    empty_path.mkdir()
    (doctor.project / ".git").mkdir()
    _, _, report = doctor.json("--verbose", env={"PATH": str(empty_path), "LMSUPPLY_ENABLED": "false"})
    git = named(report, "git")
    assert (git["status"], git["message"]) == ("warning", "git is not on PATH")
    assert named(report, "Git repository")["message"] == f"{doctor.project} is a git repository"
    assert re.fullmatch(r"[\d.]+ [KMG]?B free on the disk of .+", str(named(report, "Disk space")["message"]))
    quiet = doctor.json(env={"LMSUPPLY_ENABLED": "false"})[2]
    assert [check["name"] for check in checks_of(quiet, "Environment")] == ["git", "Disk space"]
