"""The web-ai-chat sample in a real browser: Next.js over ``ironhive run --server`` on a loopback OpenAI server.

Builds and starts the sample (``next build``, ``next start`` on a free loopback port), then runs its Playwright script
(``samples/web-ai-chat/tests/e2e.mjs``) in Debian's Chromium: the chat, GitHub Flavored Markdown with highlighted code,
and the layout at 1280 and 390 px. Screenshots go to ``tests/artifacts/web-ai-chat/``. Node.js, Chromium and the
sample's npm packages (``npm ci``) are installed by ``.ci/run``; where one is missing the test is skipped with the
install command (a failure where ``CI`` is set).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import clean_environment, ironhive_executable
from tests.support.components import CHROMIUM, CHROMIUM_PATH, NODE, npm_lock_installed
from tests.support.openai_server import ErrorReply, LoopbackOpenAIServer, TextReply, error_body

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "web-ai-chat"
ARTIFACTS = ROOT / "tests" / "artifacts" / "web-ai-chat"
SAMPLE_PACKAGES = npm_lock_installed(
    "the web-ai-chat sample's npm packages", SAMPLE, "cd samples/web-ai-chat && npm ci --no-audit --no-fund"
)


def _run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float) -> None:
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert completed.returncode == 0, (
        f"{' '.join(command)} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    )


def _node_environment() -> dict[str, str]:
    return {**os.environ, "NEXT_TELEMETRY_DISABLED": "1", "npm_config_fund": "false", "npm_config_audit": "false"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_serving(url: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "next start exited before serving"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"next start did not serve {url} within {timeout} s")


@contextlib.contextmanager
def _web_app(env: dict[str, str], log: Path) -> Iterator[str]:
    """``next start`` on a free loopback port; yields its URL and stops the whole process group afterwards."""
    port = _free_port()
    next_bin = SAMPLE / "node_modules" / "next" / "dist" / "bin" / "next"
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["node", str(next_bin), "start", "--hostname", "127.0.0.1", "--port", str(port)],
            cwd=SAMPLE,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the agents it spawns stop with it
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_serving(url, process)
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _script(server: LoopbackOpenAIServer) -> None:
    """The model's replies, in the order tests/e2e.mjs asks for them."""
    notes = {"path": "notes.md", "content": "# Notes\n\n- streamed\n"}
    server.enqueue_tool_calls([("call_notes", "write_file", notes)], text="I'll write the notes now.", usage=(100, 20))
    server.enqueue(
        TextReply(
            text="The file **notes.md** is written.\n\n- one\n- two\n",
            chunks=["The file ", "**notes.md** ", "is ", "written.", "\n\n", "- one\n", "- two\n"],
            reasoning=("Checking ", "the result."),
            usage=(20, 10),
            chunk_delay=0.4,
        )
    )
    server.enqueue_tool_calls([("call_secret", "write_file", {"path": "secrets.md", "content": "top secret"})])
    server.enqueue_text("Understood, I left secrets.md alone.")
    server.enqueue_tool_calls([("call_draft", "write_file", {"path": "draft.md", "content": "draft"})])
    server.enqueue_text("Saved your edited version.")
    story = [f"word{index} " for index in range(60)]
    server.enqueue(TextReply(text="".join(story), chunks=story, chunk_delay=0.25))
    server.enqueue_text("Yes, still here.")
    server.enqueue(ErrorReply(status=400, body=error_body("The model refused this request.", "invalid_request_error")))
    server.enqueue_text("We wrote notes.md and edited.md.")
    server.enqueue(TextReply(text=GFM_ANSWER, chunks=_pieces(GFM_ANSWER, 40), chunk_delay=0.05))


GFM_ANSWER = """## Summary

| File | State | Lines |
| :--- | :---: | ---: |
| notes.md | written | 3 |
| edited.md | written | 1 |
| secrets.md | refused | 0 |

- [x] write the notes
- [ ] ~~write draft.md~~ saved as edited.md

The draft was ~~draft.md~~ edited.md.

```python
def greet(name: str) -> str:
    return f"Hello, {name}!"
```

Raw <b>HTML</b> stays text, and so does [this link](javascript:alert(1)); [the docs](https://example.com/docs) open
in a new tab.
"""
"""GitHub Flavored Markdown as a model writes it, streamed in pieces that cut its table rows and fence in half."""


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def _users(request: dict[str, Any]) -> list[str]:
    """The user's messages of a request (without the goal reminder the context manager adds to long conversations)."""
    return [
        message["content"]
        for message in request["messages"]
        if message["role"] == "user" and not message["content"].startswith("[REMINDER]")
    ]


def _tool_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


@pytest.mark.timeout(600)  # next build takes about a minute on 2 cores, the browser script another
@NODE
@CHROMIUM
@SAMPLE_PACKAGES
def test_web_chat_in_a_browser(tmp_path: Path) -> None:
    _run(["npm", "run", "build"], cwd=SAMPLE, env=_node_environment(), timeout=300)
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    with LoopbackOpenAIServer() as server:
        _script(server)
        env = clean_environment(
            home,
            {
                "OPENAI_API_KEY": "sk-loopback-web",
                "OPENAI_MODEL": "gpt-test",
                "OPENAI_ENDPOINT": server.base_url,
                "IRONHIVE_PATH": ironhive_executable(),
                "IRONHIVE_CWD": str(work),
                "NEXT_TELEMETRY_DISABLED": "1",
            },
        )
        with _web_app(env, tmp_path / "next.log") as url:
            browser_test = subprocess.run(
                ["node", "tests/e2e.mjs"],
                cwd=SAMPLE,
                env={
                    **_node_environment(),
                    "WEB_CHAT_URL": url,
                    "WEB_CHAT_WORKDIR": str(work),
                    "WEB_CHAT_ARTIFACTS": str(ARTIFACTS),
                    "CHROMIUM_PATH": str(CHROMIUM_PATH),
                },
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
        requests = server.requests
    server_log = (tmp_path / "next.log").read_text(encoding="utf-8", errors="replace")
    report = f"{browser_test.stdout}\n{browser_test.stderr}\n--- next start ---\n{server_log[-4000:]}"
    assert browser_test.returncode == 0, report
    assert browser_test.stdout.count("ok - ") == 13, report
    assert "RESULT " in browser_test.stdout, report
    shots = sorted(path.name for path in ARTIFACTS.glob("*.png"))
    assert len(shots) == 12 and {"10-gfm-1280.png", "11-gfm-390.png", "12-sessions-drawer-390.png"} <= set(shots)

    assert len(requests) == 11, [_users(request) for request in requests]
    assert all(request["model"] == "gpt-test" and request["stream"] is True for request in requests)
    first = requests[0]
    assert _users(first) == ["Write the notes, please"]
    assert {tool["function"]["name"] for tool in first["tools"]} >= {"write_file", "read_file"}
    assert _tool_results(requests[1]) == {"call_notes": "Successfully wrote to file: notes.md"}
    assert _tool_results(requests[3])["call_secret"] == "Approval rejected: Not this file."
    assert _tool_results(requests[5])["call_draft"] == "Successfully wrote to file: edited.md"
    # Stop cancelled the story: the cancelled turn is not in the history the next request carries.
    assert _users(requests[7]) == [
        "Write the notes, please",
        "Now write secrets.md",
        "Save a draft",
        "Are you still there?",
    ]
    # One process served the whole chat (the history grew in it); after the kill, resuming restored it from the store.
    assert _users(requests[9]) == [
        "Write the notes, please",
        "Now write secrets.md",
        "Save a draft",
        "Are you still there?",
        "What did we do?",
    ]
    assert _users(requests[10])[-2:] == ["What did we do?", "Show it as a table"]
    assert (work / "notes.md").read_text(encoding="utf-8") == "# Notes\n\n- streamed\n"
    assert not (work / "secrets.md").exists() and not (work / "draft.md").exists()
