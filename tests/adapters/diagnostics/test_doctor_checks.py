"""Doctor's configuration fixes and file-mode check, environment checks, local model check, report and rendering."""

from __future__ import annotations

import importlib.util
import io
import json
import os
from pathlib import Path

import pytest

from ironhive.adapters.config.schema import LMSupplySection
from ironhive.adapters.diagnostics.configuration import (
    STARTER_CONFIG,
    apply_configuration_fixes,
    configuration_checks,
    exposed_secret_files,
    holds_secret,
)
from ironhive.adapters.diagnostics.environment import LOW_DISK_BYTES, disk_space_check, git_check
from ironhive.adapters.diagnostics.local_model import local_model_check
from ironhive.adapters.diagnostics.render import render_plain, render_rich, summary_line
from ironhive.adapters.diagnostics.report import Check, DoctorReport, human_size

posix_modes = pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
needs_llama_cpp = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


@pytest.mark.parametrize(
    ("name", "text", "secret"),
    [
        ("config.yaml", "openai:\n  apiKey: sk-1\n", True),
        ("config.yaml", "openai:\n  apiKey: ''\n  model: m\n", False),
        ("config.yaml", "webSearch:\n  tavilyApiKey: tv-1\n", True),
        ("config.yaml", "compaction:\n  maxContextTokens: 4096\n", False),
        ("config.yaml", "openai: [broken\n", False),
        ("settings.json", '{"googleai": {"apiKey": "g-1"}}', True),
        (".env", "# nothing\nOPENAI_MODEL=gpt\n", False),
        (".env", "export HF_TOKEN=hf_1\n", True),
    ],
)
def test_holds_secret(tmp_path: Path, name: str, text: str, secret: bool) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert holds_secret(path) is secret


@posix_modes
def test_fixes_create_migrate_and_restrict_then_nothing_is_left_to_fix(home: Path, project: Path) -> None:
    assert apply_configuration_fixes(home, project) == [
        f"Created {home / '.ironhive'} (mode 0700)",
        f"Created {home / '.ironhive' / 'config.yaml'} (mode 0600)",
    ]
    assert (home / ".ironhive" / "config.yaml").read_text() == STARTER_CONFIG
    dotenv = project / ".env"
    dotenv.write_text("OPENAI_API_KEY=sk-1\n")
    dotenv.chmod(0o604)
    assert exposed_secret_files(home, project) == [dotenv]
    assert apply_configuration_fixes(home, project) == [f"Restricted {dotenv} to its owner (mode 0600)"]
    assert dotenv.stat().st_mode & 0o777 == 0o600
    assert apply_configuration_fixes(home, project) == []
    checks = configuration_checks(home, project, {}).checks
    assert [(check.name, check.status) for check in checks] == [
        ("Global config file", "pass"),
        ("Project trust", "warning"),  # the untrusted project's .env key is ignored, and doctor says so
        ("Config files", "pass"),
        ("Permission policy", "pass"),
        ("File permissions", "pass"),
        ("Private files", "pass"),
    ]


def test_a_legacy_file_is_migrated_by_the_fix(home: Path, project: Path) -> None:
    legacy = home / ".ironhive" / "settings.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps({"openai": {"model": "gpt-legacy"}}))
    fixes = apply_configuration_fixes(home, project)
    assert fixes == [f"Migrated legacy settings {legacy} to {home / '.ironhive' / 'config.yaml'}"]
    findings = configuration_checks(home, project, {})
    assert findings.config.openai.model == "gpt-legacy"


def test_without_the_fix_loading_migrates_and_the_check_says_so(home: Path, project: Path) -> None:
    legacy = home / ".ironhive" / "settings.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps({"openai": {"model": "gpt-legacy"}}))
    checks = {check.name: check for check in configuration_checks(home, project, {}).checks}
    assert checks["Global config file"].message.endswith("config.yaml (created by the migration)")
    assert checks["Legacy settings"].message.startswith("Migrated legacy settings")


def test_permission_sources(home: Path, project: Path) -> None:
    (home / ".ironhive").mkdir()
    (home / ".ironhive" / "config.yaml").write_text("permissions:\n  defaultAction: deny\n")
    checks = {check.name: check for check in configuration_checks(home, project, {}).checks}
    assert checks["Permission policy"].message == "Valid: the permissions section of config.yaml"
    (project / ".ironhive").mkdir()
    (project / ".ironhive" / "permissions.json").write_text('{"permissions": {"default_action": "ask"}}')
    checks = {check.name: check for check in configuration_checks(home, project, {}).checks}
    assert checks["Permission policy"].message == f"Valid: {project / '.ironhive' / 'permissions.json'}"


def test_disk_space_and_git() -> None:
    low = disk_space_check(LOW_DISK_BYTES - 1, Path("/data"), verbose=False)
    assert (low.status, low.message) == ("warning", "Only 1000.0 MB free on the disk of /data")
    plenty = disk_space_check(LOW_DISK_BYTES, Path("/data"), verbose=False)
    assert (plenty.status, plenty.message) == ("pass", "At least 1 GB free")
    assert disk_space_check(12_345_678_901, Path("/data"), verbose=True).message == "12.3 GB free on the disk of /data"
    assert git_check("", verbose=False).status == "warning"


def test_human_size() -> None:
    assert [human_size(size) for size in (0, 999, 1000, 98_412_345, 2_000_000_000_000)] == [
        "0 B",
        "999 B",
        "1.0 KB",
        "98.4 MB",
        "2000.0 GB",
    ]


@needs_llama_cpp
def test_local_model_file_states(home: Path, tmp_path: Path) -> None:
    def check(section: LMSupplySection, environ: dict[str, str] | None = None, *, verbose: bool = False) -> Check:
        (found,) = local_model_check(section, home=home, environ=environ or {}, verbose=verbose, load=False)
        return found

    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(2044))
    present = check(LMSupplySection(model_path=str(model)), verbose=True)
    assert (present.status, present.message) == ("pass", f"Model file present: {model} (2.0 KB)")
    quiet = check(LMSupplySection(model_path=str(model)))
    assert quiet.message == "Model file present: tiny.gguf"
    missing = check(LMSupplySection(model_path=str(tmp_path / "no.gguf")))
    assert (missing.status, missing.message) == (
        "error",
        f"Model file not found: {tmp_path / 'no.gguf'} (lmsupply.modelPath)",
    )
    remote = LMSupplySection(hugging_face_repo="owner/repo", hugging_face_file="m.gguf")
    later = check(remote)
    assert (later.status, later.message) == (
        "pass",
        "owner/repo/m.gguf is not downloaded yet; the first run downloads it",
    )
    offline = check(remote, {"HF_HUB_OFFLINE": "1"})
    assert offline.status == "error"
    half = check(LMSupplySection(hugging_face_repo="owner/repo"))
    assert half.status == "error"
    bad = LMSupplySection(hugging_face_repo="not-a-repo", hugging_face_file="m.gguf")
    assert check(bad).status == "error"


def _report() -> DoctorReport:
    return DoctorReport.of(
        [
            Check(
                category="Environment", name="git", status="warning", message="git is not on PATH", hint="Install it."
            ),
            Check(category="Configuration", name="Config files", status="pass", message="No problems"),
            Check(category="Providers", name="Selection", status="error", message="None [configured]", hint="Set one."),
        ],
        ["Created ~/.ironhive (mode 0700)"],
    )


def test_report_orders_by_category_and_counts() -> None:
    report = _report()
    assert [check.category for check in report.checks] == ["Configuration", "Providers", "Environment"]
    assert report.summary == {"pass": 1, "warning": 1, "error": 1}
    assert report.failed
    assert report.to_json()["fixes"] == ["Created ~/.ironhive (mode 0700)"]
    assert summary_line(report) == "Summary: 1 passed, 1 warning, 1 error"


def test_plain_rendering() -> None:
    assert render_plain(_report()) == (
        "Fixes applied\n"
        "  - Created ~/.ironhive (mode 0700)\n"
        "\n"
        "Configuration\n"
        "  OK     Config files: No problems\n"
        "\n"
        "Providers\n"
        "  ERROR  Selection: None [configured]\n"
        "         Hint: Set one.\n"
        "\n"
        "Environment\n"
        "  WARN   git: git is not on PATH\n"
        "         Hint: Install it.\n"
        "\n"
        "Summary: 1 passed, 1 warning, 1 error\n"
    )


def test_rich_rendering_keeps_brackets_and_shows_hints() -> None:
    stream = io.StringIO()
    render_rich(_report(), stream)
    text = stream.getvalue()
    for expected in ("Fixes applied", "Configuration", "None [configured]", "→ Set one.", "Summary: 1 passed"):
        assert expected in text


@posix_modes
def test_the_fix_restricts_every_path_under_ironhive_the_check_reported(home: Path, project: Path) -> None:
    base = home / ".ironhive"
    session = base / "projects" / "0123456789abcdef" / "cache.db"
    session.parent.mkdir(parents=True)
    session.write_bytes(b"")
    for path, wrong in ((base, 0o711), (base / "projects", 0o750), (session.parent, 0o700), (session, 0o604)):
        path.chmod(wrong)
    (check,) = [check for check in configuration_checks(home, project, {}).checks if check.name == "Private files"]
    assert (check.status, check.message) == (
        "warning",
        f"Accessible to the group or others: {base} (0711), {base / 'projects'} (0750), {session} (0604)",
    )
    fixes = apply_configuration_fixes(home, project)
    assert fixes == [
        f"Created {base / 'config.yaml'} (mode 0600)",
        f"Restricted {base} to its owner (mode 0700)",
        f"Restricted {base / 'projects'} to its owner (mode 0700)",
        f"Restricted {session} to its owner (mode 0600)",
    ]
    assert (base.stat().st_mode & 0o777, session.stat().st_mode & 0o777) == (0o700, 0o600)
    (after,) = [check for check in configuration_checks(home, project, {}).checks if check.name == "Private files"]
    assert after.status == "pass"
