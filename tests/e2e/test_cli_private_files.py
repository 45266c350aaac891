"""The real ``ironhive``: owner-only files under ~/.ironhive, masked secrets in ``get``/``config``, ``| head``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from ironhive.adapters.sessions.store import DiskCacheSessionStore
from ironhive.ports.chat import Role
from tests.support.cli import clean_environment, ironhive_executable, run_ironhive

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes and pipes")

KEY = "sk-QXZ0123456789secretvalue"
PASSWORD = "pw-QXZ987654321"
URL_KEY = "QXZ-url-key-0123456789"
HEADER_TOKEN = "QXZ-header-token-0123456789"
TOOL_ROUND = {
    "steps": [
        {
            "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}, "id": "call_1"}],
            "usage": {"input_tokens": 10, "output_tokens": 2},
        },
        {"text": "One file.", "usage": {"input_tokens": 12, "output_tokens": 3}},
    ]
}
LONG_ANSWER = [f"line {number}\n" for number in range(1, 9)]
TOOL_THEN_LONG_ANSWER = {
    "steps": [
        TOOL_ROUND["steps"][0],
        {"deltas": LONG_ANSWER, "delay_seconds": 0.2, "usage": {"input_tokens": 12, "output_tokens": 8}},
    ]
}
NEXT_ANSWER = {"steps": [{"text": "Still here.", "usage": {"input_tokens": 20, "output_tokens": 3}}]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    return work


def script(tmp_path: Path, name: str, content: dict[str, object]) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(content))
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def open_to_others(root: Path) -> dict[str, str]:
    """Every path under ``root`` (itself included) with group or other bits, relative, with its mode."""
    found = {root: mode(root)}
    for directory, folders, files in os.walk(root):
        found.update({Path(directory, name): mode(Path(directory, name)) for name in (*folders, *files)})
    return {str(path.relative_to(root)): f"{bits:04o}" for path, bits in found.items() if bits & 0o077}


def run_with_umask(*args: str, cwd: Path, home: Path, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    """``ironhive *args`` with a umask that leaves files readable by others unless ironhive creates them private."""
    return subprocess.run(
        [ironhive_executable(), *args],
        cwd=cwd,
        env=clean_environment(home),
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        umask=umask,
    )


def test_a_run_leaves_nothing_under_ironhive_open_to_others(tmp_path: Path, home: Path, workspace: Path) -> None:
    assert run_with_umask("set", "openai.model", "gpt-test", cwd=workspace, home=home).returncode == 0
    model = script(tmp_path, "tools", TOOL_ROUND)
    completed = run_with_umask("--provider", "scripted", "-m", str(model), "-p", "List", cwd=workspace, home=home)
    assert completed.returncode == 0, completed.stderr
    again = run_with_umask("--provider", "scripted", "-m", str(model), "-c", "-p", "Again", cwd=workspace, home=home)
    assert again.returncode == 0, again.stderr
    base = home / ".ironhive"
    names = {str(path.relative_to(base)) for path in base.rglob("*")}
    assert {"config.yaml", "logs", "projects"} <= names
    assert any(name.endswith("cache.db") for name in names)
    assert any(name.endswith(".execlog.jsonl") for name in names)
    assert open_to_others(base) == {}


def test_start_up_restricts_a_folder_and_a_config_file_left_open(tmp_path: Path, home: Path, workspace: Path) -> None:
    base = home / ".ironhive"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    config = base / "config.yaml"
    config.write_text(f"openai:\n  apiKey: {KEY}\n")
    config.chmod(0o644)
    model = script(tmp_path, "answer", NEXT_ANSWER)
    completed = run_ironhive("--provider", "scripted", "-m", str(model), "-p", "Hi", cwd=workspace, home=home)
    assert completed.returncode == 0, completed.stderr
    assert (mode(base), mode(config)) == (0o700, 0o600)
    assert open_to_others(base) == {}


def test_doctor_reports_files_open_to_others_and_fix_restricts_them(home: Path, workspace: Path) -> None:
    base = home / ".ironhive"
    logs = base / "logs"
    logs.mkdir(parents=True)
    log = logs / "1a2b-3c4d.execlog.jsonl"
    log.write_text('{"type":"turn_start"}\n')
    database = base / "projects" / "0123456789abcdef" / "cache.db"
    database.parent.mkdir(parents=True)
    database.write_bytes(b"")
    for path, wanted in ((base, 0o700), (database.parents[1], 0o700), (database.parent, 0o700), (logs, 0o755)):
        path.chmod(wanted)
    log.chmod(0o644)
    database.chmod(0o640)
    environment = {"LMSUPPLY_ENABLED": "false"}

    before = json.loads(run_ironhive("doctor", "--json", cwd=workspace, home=home, env=environment).stdout)
    (check,) = [check for check in before["checks"] if check["name"] == "Private files"]
    assert check["status"] == "warning"
    assert check["message"] == f"Accessible to the group or others: {logs} (0755), {log} (0644), {database} (0640)"
    assert "doctor --fix" in check["hint"]
    assert mode(log) == 0o644  # reporting changes nothing

    fixed = json.loads(run_ironhive("doctor", "--fix", "--json", cwd=workspace, home=home, env=environment).stdout)
    assert [fix for fix in fixed["fixes"] if fix.startswith("Restricted")] == [
        f"Restricted {logs} to its owner (mode 0700)",
        f"Restricted {log} to its owner (mode 0600)",
        f"Restricted {database} to its owner (mode 0600)",
    ]
    (after,) = [check for check in fixed["checks"] if check["name"] == "Private files"]
    assert after == {
        "category": "Configuration",
        "name": "Private files",
        "status": "pass",
        "message": "Everything under ~/.ironhive is accessible to its owner only",
        "hint": None,
    }
    assert open_to_others(base) == {}


def test_get_and_config_show_mask_url_credentials_and_nested_secrets(home: Path, workspace: Path) -> None:
    base = home / ".ironhive"
    base.mkdir(mode=0o700)
    (base / "config.yaml").write_text(
        "openai:\n"
        f"  apiKey: {KEY}\n"
        f"  endpoint: https://proxy-user:{PASSWORD}@proxy.example/v1?api-key={URL_KEY}\n"
        "  model: gpt-test\n"
        "permissions:\n"
        "  notes:\n"
        f"    - headers: {{Authorization: 'Bearer {HEADER_TOKEN}'}}\n"
        f"      password: {PASSWORD}\n"
        "plugins:\n"
        "  search:\n"
        f"    url: https://mcp.example/sse?token={URL_KEY}\n"
        f"    headers: {{X-Api-Key: {HEADER_TOKEN}}}\n"
    )
    everything = run_ironhive("get", cwd=workspace, home=home)
    section = run_ironhive("get", "openai", cwd=workspace, home=home)
    endpoint = run_ironhive("get", "openai.endpoint", cwd=workspace, home=home)
    shown = run_ironhive("config", "show", cwd=workspace, home=home)
    for completed in (everything, section, endpoint, shown):
        assert completed.returncode == 0, completed.stderr
        for secret in (KEY, PASSWORD, URL_KEY, HEADER_TOKEN, "proxy-user"):
            assert secret not in completed.stdout + completed.stderr
    masked_endpoint = "https://***:***@proxy.example/v1?api-key=***"
    assert endpoint.stdout == masked_endpoint + "\n"
    assert f"openai.apiKey = ***alue\nopenai.endpoint = {masked_endpoint}\n" in section.stdout
    lines = everything.stdout.splitlines()
    assert 'permissions.notes = [{"headers": {"Authorization": "***6789"}, "password": "***321"}]' in lines
    assert "plugins.search.url = https://mcp.example/sse?token=***" in lines
    assert "plugins.search.headers.X-Api-Key = ***6789" in lines
    assert f"openai.endpoint = {masked_endpoint}" in shown.stdout.splitlines()
    assert "openai.apiKey = (set)" in shown.stdout.splitlines()
    raw = run_ironhive("get", "openai.endpoint", "--raw", cwd=workspace, home=home)
    assert PASSWORD in raw.stdout  # --raw is how the user asks for the value itself


@pytest.mark.parametrize("output", ["text", "jsonl"])
def test_a_reader_closing_the_pipe_early_ends_quietly_and_the_turn_is_saved(
    tmp_path: Path, home: Path, workspace: Path, output: str
) -> None:
    model = script(tmp_path, "long", TOOL_THEN_LONG_ANSWER)
    errors = tmp_path / "stderr.txt"
    with (
        errors.open("w") as stderr,
        subprocess.Popen(
            [ironhive_executable(), "--provider", "scripted", "-m", str(model), "-p", "List", "-o", output, "--plain"],
            cwd=workspace,
            env=clean_environment(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        ) as process,
    ):
        assert process.stdout is not None
        first = process.stdout.readline()  # what `| head -1` reads before it exits
        process.stdout.close()
        code = process.wait(timeout=60)
    assert first.strip(), errors.read_text()
    assert code in (0, 128 + signal.SIGPIPE, -signal.SIGPIPE)
    text = errors.read_text()
    assert "Traceback" not in text
    assert "BrokenPipe" not in text

    follow_up = script(tmp_path, "next", NEXT_ANSWER)
    continued = run_ironhive(
        "--provider", "scripted", "-m", str(follow_up), "-c", "-p", "And now?", "-o", "json", cwd=workspace, home=home
    )
    assert continued.returncode == 0, continued.stderr
    session = json.loads(continued.stdout)["sessionId"]
    store = DiskCacheSessionStore(home / ".ironhive", workspace)
    messages = asyncio.run(store.load_messages(session))
    texts = [(message.role, message.text) for message in messages if message.text]
    assert texts[0] == (Role.USER, "List")
    assert (Role.ASSISTANT, "".join(LONG_ANSWER)) in texts  # the whole answer, though nobody read it
    assert texts[-2:] == [(Role.USER, "And now?"), (Role.ASSISTANT, "Still here.")]
    assert any(part for message in messages for part in message.parts if type(part).__name__ == "ToolResultPart")
