"""The console-chat sample end to end: a real subprocess on a loopback OpenAI server and on a scripted model."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from tests.support.cli import clean_environment, run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "console-chat" / "console_chat.py"
PROMPT = "\n> "  # every output ends with a newline before the prompt; "<id> " in the help must not match
TIMEOUT = 30.0


class Chat:
    """The sample in a subprocess: send a line, then wait until the next prompt appears on stdout."""

    def __init__(self, *args: str, cwd: Path, home: Path) -> None:
        self._command = [sys.executable, str(SAMPLE), *args]
        self._cwd = cwd
        self._env = clean_environment(home, {"PYTHONUNBUFFERED": "1"})
        self._output = bytearray()
        self._seen = 0
        self._changed = threading.Condition()
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self.stderr = b""

    def __enter__(self) -> Chat:
        self._process = subprocess.Popen(
            self._command,
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        process = self._process
        assert process is not None and process.stdin is not None and process.stderr is not None
        if not process.stdin.closed:
            process.stdin.close()
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self._reader is not None:
            self._reader.join(timeout=TIMEOUT)
        self.stderr = process.stderr.read()
        process.stderr.close()
        assert process.stdout is not None
        process.stdout.close()

    def _pump(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        descriptor = self._process.stdout.fileno()
        while chunk := os.read(descriptor, 4096):
            with self._changed:
                self._output += chunk
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def until_prompt(self) -> str:
        """Everything written since the last prompt, up to (not including) the next one."""
        deadline = time.monotonic() + TIMEOUT
        with self._changed:
            while True:
                index = self._output.find(PROMPT.encode(), self._seen)
                if index >= 0:
                    text = self._output[self._seen : index + 1].decode()
                    self._seen = index + len(PROMPT)
                    return text
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no prompt after {self._output[self._seen :].decode()!r}"
                self._changed.wait(remaining)

    def wait_for(self, text: str) -> None:
        """Wait until ``text`` appears in the output after the last prompt."""
        deadline = time.monotonic() + TIMEOUT
        with self._changed:
            while self._output.find(text.encode(), self._seen) < 0:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"{text!r} not in {self._output[self._seen :].decode()!r}"
                self._changed.wait(remaining)

    def type(self, line: str) -> None:
        """Type ``line`` without waiting for its output."""
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(line.encode() + b"\n")
        self._process.stdin.flush()

    def interrupt(self) -> None:
        """Press Ctrl+C."""
        assert self._process is not None
        self._process.send_signal(signal.SIGINT)

    def send(self, line: str) -> str:
        """Type ``line`` and return the output it produced."""
        self.type(line)
        return self.until_prompt()

    def finish(self, line: str = "exit") -> tuple[int, str]:
        """Type ``line`` (which should end the chat) and return the exit code and the last output."""
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(line.encode() + b"\n")
        self._process.stdin.close()
        code = self._process.wait(timeout=TIMEOUT)
        assert self._reader is not None
        self._reader.join(timeout=TIMEOUT)
        return code, self._output[self._seen :].decode()


def _user_and_assistant(request: dict[str, object]) -> list[tuple[str, str]]:
    messages = request["messages"]
    assert isinstance(messages, list)
    # Without the goal reminder the context manager may add to longer conversations.
    return [
        (m["role"], m["content"])
        for m in messages
        if m["role"] in {"user", "assistant"} and not str(m["content"]).startswith("[REMINDER]")
    ]


def test_chat_sessions_and_continue_on_a_loopback_openai_server(tmp_path: Path) -> None:
    project = tmp_path / "project"
    work = project / "src"  # the .env sits two folders up: the sample must search upwards
    work.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    with LoopbackOpenAIServer() as server:
        (project / ".env").write_text(
            "# settings for the sample\n"
            "OPENAI_API_KEY='sk-loopback-console'\n"
            f"export OPENAI_ENDPOINT={server.base_url}\n"
            'OPENAI_MODEL="gpt-test"\n',
            encoding="utf-8",
        )
        server.enqueue_text("Hi! How can I help?", chunks=["Hi! ", "How can ", "I help?"], usage=(12, 6))
        server.enqueue_text("A second answer.", usage=(9, 4))
        server.enqueue_text("You said hello.", usage=(30, 5))
        with Chat(cwd=work, home=home) as chat:
            banner = chat.until_prompt()
            assert "gpt-test at http://127.0.0.1" in banner and str(project / ".env") in banner

            answer = chat.send("Hello there")
            assert "Hi! How can I help?" in answer and "(tokens: 12 in, 6 out)" in answer

            listing = chat.send("/sessions")
            first_id = re.search(r"^\* ([0-9a-f]+-[0-9a-f]{8}) .* 2 messages\s+Hello there$", listing, re.M)
            assert first_id is not None, listing

            assert "Started a new conversation." in chat.send("/new")
            assert "A second answer." in chat.send("Second chat")
            listing = chat.send("/sessions")
            assert len(re.findall(r"^[ *] [0-9a-f]+-[0-9a-f]{8} ", listing, re.M)) == 2, listing
            assert re.search(rf"^  {first_id[1]} .*ended .* Hello there$", listing, re.M), listing

            restored = chat.send(f"/continue {first_id[1]}")
            assert f"Continuing session {first_id[1]} (2 messages)." in restored
            assert "assistant: Hi! How can I help?" in restored
            assert "No session nope-00000000" in chat.send("/continue nope-00000000")
            assert "You said hello." in chat.send("What did I say?")
            code, tail = chat.finish("exit")
        requests = server.requests
    assert code == 0, chat.stderr.decode()
    assert tail == ""
    assert chat.stderr == b""
    first, second, third = requests
    assert first["model"] == "gpt-test" and first["stream"] is True
    assert _user_and_assistant(first) == [("user", "Hello there")]
    assert _user_and_assistant(second) == [("user", "Second chat")]  # /new forgot the first conversation
    assert _user_and_assistant(third) == [
        ("user", "Hello there"),
        ("assistant", "Hi! How can I help?"),
        ("user", "What did I say?"),
    ]
    # The sample writes to the same store as the CLI: ironhive sees both conversations of this folder.
    listed = run_ironhive("sessions", "list", "-o", "json", cwd=work, home=home)
    assert listed.returncode == 0, listed.stderr
    sessions = {entry["id"]: entry for entry in json.loads(listed.stdout)}
    assert sessions[first_id[1]]["messageCount"] == 4 and sessions[first_id[1]]["model"] == "gpt-test"
    assert sorted(entry["firstMessage"] for entry in sessions.values()) == ["Hello there", "Second chat"]


def test_scripted_model_streams_thinking_and_answer(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "thinking": "The user greets me.",
                    "deltas": ["Hello ", "from ", "the script."],
                    "usage": {"input_tokens": 3, "output_tokens": 4},
                },
                {"error": {"message": "the model is down", "status": 503}},
                {"deltas": ["slow ", "words ", "that ", "never ", "end "], "delay_seconds": 1.0},
                {"text": "Back again."},
            ]
        ),
        encoding="utf-8",
    )
    with Chat("--provider", "scripted", "-m", str(script), cwd=tmp_path, home=tmp_path) as chat:
        assert "scripted model (script)" in chat.until_prompt()
        answer = chat.send("Hi")
        assert answer.startswith("[Thinking]\nThe user greets me.\n[Answer]\nHello from the script.\n")
        assert "(tokens: 3 in, 4 out)" in answer
        assert "[error] the model is down" in chat.send("Again")
        chat.type("Tell a long story")
        chat.wait_for("slow ")
        chat.interrupt()  # Ctrl+C stops the answer, not the chat
        assert chat.until_prompt().endswith("\n[cancelled]\n")
        assert "Back again." in chat.send("Once more")
        assert "/continue <id>" in chat.send("/help")
        code, _ = chat.finish("quit")
    assert code == 0, chat.stderr.decode()
    listed = run_ironhive("sessions", "list", "-o", "json", cwd=tmp_path, home=tmp_path)
    (session,) = json.loads(listed.stdout)
    # The failed and the cancelled turn left nothing behind: only "Hi" and "Once more" with their answers.
    assert (session["messageCount"], session["status"], session["model"]) == (4, "ended", "script")
