"""``ironhive update`` in the real process against a loopback package index (never the real one)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ironhive import __version__
from tests.support.cli import clean_environment, ironhive_executable


class FakeIndex:
    """A PyPI-like index on 127.0.0.1: ``/pypi/ironhive/json`` answers ``answer``; every path asked is recorded."""

    def __init__(self) -> None:
        self.status = 200
        self.body = json.dumps({"info": {"version": __version__}}).encode()
        self.paths: list[str] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.paths.append(self.path)
                if self.path == "/pypi/ironhive/json":
                    status, body = index.status, index.body
                else:
                    status, body = 404, b"Not Found"
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def release(self, version: str) -> None:
        self.status, self.body = 200, json.dumps({"info": {"version": version}}).encode()

    def __enter__(self) -> FakeIndex:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@pytest.fixture
def index() -> Iterator[FakeIndex]:
    with FakeIndex() as server:
        yield server


def update(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``ironhive update`` with HOME and cwd in ``tmp_path``, without the caller's pip configuration."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    environment = clean_environment(home, env)
    for variable in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        if variable not in (env or {}):
            environment.pop(variable, None)
    environment["PIP_CONFIG_FILE"] = os.devnull
    return subprocess.run(
        [ironhive_executable(), "update", *args],
        cwd=project,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def scrub(text: str) -> str:
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)


def test_check_when_current_exits_0(tmp_path: Path, index: FakeIndex) -> None:
    completed = update(tmp_path, "--check", "--index-url", index.url)
    assert (completed.returncode, scrub(completed.stdout), completed.stderr) == (
        0,
        f"ironhive {__version__} is up to date (newest release on http://127.0.0.1:<port>: {__version__}).\n",
        "",
    )
    assert index.paths == ["/pypi/ironhive/json"]


def test_check_when_the_index_is_behind_the_installed_version_exits_0(tmp_path: Path, index: FakeIndex) -> None:
    index.release("0.0.1")
    completed = update(tmp_path, "--check", "--index-url", index.url + "/simple/")
    assert completed.returncode == 0
    assert completed.stdout.startswith(f"ironhive {__version__} is up to date")


def test_check_when_newer_exits_2(tmp_path: Path, index: FakeIndex) -> None:
    index.release("999.0.0")
    completed = update(tmp_path, "--check", "--index-url", index.url)
    assert (completed.returncode, completed.stdout, completed.stderr) == (
        2,
        f"Update available: ironhive {__version__} → 999.0.0\nRun `ironhive update` to install it.\n",
        "",
    )


def test_pip_index_url_of_a_pypi_like_server_is_used(tmp_path: Path, index: FakeIndex) -> None:
    index.release("999.0.0")
    completed = update(tmp_path, "--check", env={"PIP_INDEX_URL": index.url + "/simple"})
    assert completed.returncode == 2
    assert index.paths == ["/pypi/ironhive/json"]


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (500, b'{"message": "Internal Server Error"}', "HTTP 500 Internal Server Error: Internal Server Error"),
        (200, b"<html>maintenance</html>", "the answer is not JSON"),
        (200, b'{"info": {}}', "answered without a version (no info.version)"),
        (200, b'{"info": {"version": "not a version"}}', "'not a version' is not a version number"),
    ],
)
def test_a_failed_check_exits_1(tmp_path: Path, index: FakeIndex, status: int, body: bytes, reason: str) -> None:
    index.status, index.body = status, body
    completed = update(tmp_path, "--check", "--index-url", index.url)
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr.startswith("Error: Cannot check for updates: ")
    assert reason in completed.stderr


def test_an_index_without_ironhive_says_so(tmp_path: Path, index: FakeIndex) -> None:
    completed = update(tmp_path, "--check", "--index-url", index.url + "/other/simple")
    assert completed.returncode == 1
    assert scrub(completed.stderr) == (
        "Error: Cannot check for updates: ironhive is not on the index http://127.0.0.1:<port>/other "
        "(http://127.0.0.1:<port>/other/pypi/ironhive/json: HTTP 404)\n"
    )


def test_an_unreachable_index_fails_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    completed = update(tmp_path, "--check", "--index-url", "http://127.0.0.1:9")
    assert time.monotonic() - started < 5
    assert completed.returncode == 1
    assert completed.stderr == (
        "Error: Cannot check for updates: http://127.0.0.1:9/pypi/ironhive/json: [Errno 111] Connection refused\n"
    )


def test_an_index_url_that_is_not_http_is_refused(tmp_path: Path) -> None:
    completed = update(tmp_path, "--check", "--index-url", "file:///etc")
    assert completed.returncode == 1
    assert (
        completed.stderr == "Error: Cannot check for updates: --index-url must be an http(s) URL, not 'file:///etc'\n"
    )


def test_without_a_terminal_and_without_force_nothing_is_installed(tmp_path: Path, index: FakeIndex) -> None:
    index.release("999.0.0")
    completed = update(tmp_path, "--index-url", index.url)
    assert completed.returncode == 1
    assert completed.stdout == f"Update available: ironhive {__version__} → 999.0.0\n"
    assert completed.stderr.endswith(
        "Error: Not updating without confirmation: there is no terminal to ask on. Pass --force to update "
        "(or --dry-run to see the command).\n"
    )
    assert index.paths == ["/pypi/ironhive/json"]


def test_dry_run_prints_the_pip_command_of_this_environment(tmp_path: Path, index: FakeIndex) -> None:
    index.release("999.0.0")
    completed = update(tmp_path, "--force", "--dry-run", "--index-url", index.url)
    assert completed.returncode == 0
    lines = completed.stdout.splitlines()
    assert lines[0] == f"Update available: ironhive {__version__} → 999.0.0"
    match = re.fullmatch(r"Would run: (\S+) -m pip install --upgrade --index-url (\S+) ironhive==999\.0\.0", lines[1])
    assert match is not None, lines
    assert Path(match[1]).parent == Path(ironhive_executable()).parent
    assert match[2] == index.url + "/simple/"
    assert index.paths == ["/pypi/ironhive/json"]  # nothing was installed: pip never asked the index


def test_force_runs_the_installer(tmp_path: Path, index: FakeIndex) -> None:
    """pip really runs against the loopback index, finds no ironhive 999.0.0 there, and the update reports it."""
    index.release("999.0.0")
    completed = update(tmp_path, "--force", "--index-url", index.url, env={"PIP_NO_INPUT": "1"})
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert lines[0] == f"Update available: ironhive {__version__} → 999.0.0"
    assert re.fullmatch(r"Running: \S+ -m pip install --upgrade --index-url \S+ ironhive==999\.0\.0", lines[1])
    assert "/simple/ironhive/" in index.paths  # pip asked the loopback index
    assert "No matching distribution found for ironhive==999.0.0" in completed.stderr
    assert completed.stderr.endswith("Error: The upgrade failed (pip exited with 1).\n")
