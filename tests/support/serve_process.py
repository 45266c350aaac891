"""ServeProcess: the real ``ironhive serve`` on a loopback port, spoken to over HTTP and SSE (stdlib client only)."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.cli import clean_environment, ironhive_executable

LISTENING = re.compile(r"Listening on http://(?P<host>[^ ]+):(?P<port>\d+) \((?P<token>[^)]*)\)")
TIMEOUT = 20.0


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: status, headers (lower-case names) and the body (parsed when JSON)."""

    status: int
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True, slots=True)
class Frame:
    """One SSE event: its id, its event name and its data parsed as JSON."""

    id: str
    event: str
    data: dict[str, Any]
    raw: str


class ServeProcess:
    """``ironhive serve --port 0 *args`` in a subprocess; waits for its ``Listening on`` line.

    Args:
        args: Extra arguments (``--provider scripted -m script.json``...).
        cwd: The working directory (the project).
        home: ``HOME`` (its ``.ironhive/config.yaml`` is the user's configuration).
        env: Extra environment variables.
    """

    def __init__(self, *args: str, cwd: Path, home: Path, env: Mapping[str, str] | None = None) -> None:
        self.command = [ironhive_executable(), "serve", "--port", "0", *args]
        self.cwd = cwd
        self.home = home
        self.env = clean_environment(home, env)
        self.stderr_lines: list[str] = []
        self.port = 0
        self.host = "127.0.0.1"
        self._process: subprocess.Popen[str] | None = None
        self._listening = threading.Event()
        self._reader: threading.Thread | None = None
        self._token: str | None = None

    def __enter__(self) -> ServeProcess:
        self._process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 60
        while not self._listening.wait(0.1):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"ironhive serve did not start: {''.join(self.stderr_lines)}")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        code = self.stop()
        if exc_type is None:
            assert code == 0, self.stderr
            assert "Traceback" not in self.stderr, self.stderr

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.stderr_lines.append(line)
            if (match := LISTENING.search(line)) is not None:
                self.host, self.port = match["host"], int(match["port"])
                self._listening.set()

    @property
    def process(self) -> subprocess.Popen[str]:
        assert self._process is not None
        return self._process

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig`` (SIGTERM by default) and wait; kill when it does not end. Returns the exit code."""
        process = self.process
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
        if self._reader is not None:
            self._reader.join(timeout=timeout)
        if process.stdout is not None:
            process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()
        return process.returncode

    @property
    def token(self) -> str:
        """The token the server uses: configured via the environment, else the token file."""
        if self._token is None:
            self._token = self.env.get("IRONHIVE_SERVER_TOKEN") or (
                (self.home / ".ironhive" / "server-token").read_text().strip()
            )
        return self._token

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        raw: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        token: str | None = "",
        chunked: bool = False,
    ) -> Answer:
        """One request; ``token=None`` sends no Authorization header, ``""`` the server's token; ``chunked`` sends the
        body without a length."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            sent = dict(headers or {})
            if token is not None:
                sent.setdefault("Authorization", f"Bearer {token or self.token}")
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            if data is not None:
                sent.setdefault("Content-Type", "application/json")
            if chunked and data is not None:
                connection.request(method, path, body=iter([data]), headers=sent, encode_chunked=True)
            else:
                connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            content = response.read()
            names = {name.lower(): value for name, value in response.getheaders()}
            parsed: Any = content.decode("utf-8", "replace")
            if names.get("content-type", "").startswith("application/json"):
                parsed = json.loads(content)
            return Answer(response.status, names, parsed)
        finally:
            connection.close()

    def new_session(self, session_id: str | None = None) -> str:
        answer = self.request("POST", "/v1/sessions", {} if session_id is None else {"id": session_id})
        assert answer.status in (200, 201), answer
        return str(answer.body["id"])

    def send(self, session_id: str, content: str, **fields: Any) -> str:
        answer = self.request("POST", f"/v1/sessions/{session_id}/messages", {"content": content, **fields})
        assert answer.status == 202, answer
        return str(answer.body["turn_id"])

    def events(self, session_id: str, *, last_event_id: str | None = None, after: str | None = None) -> EventStream:
        return EventStream(self, session_id, last_event_id=last_event_id, after=after)


class EventStream:
    """An open ``GET /v1/sessions/{id}/events`` SSE stream, read frame by frame."""

    def __init__(self, server: ServeProcess, session_id: str, *, last_event_id: str | None, after: str | None) -> None:
        self.connection = http.client.HTTPConnection(server.host, server.port, timeout=TIMEOUT)
        headers = {"Authorization": f"Bearer {server.token}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        path = f"/v1/sessions/{session_id}/events" + (f"?after={after}" if after is not None else "")
        self.connection.request("GET", path, headers=headers)
        self.sock = self.connection.sock  # the response reads from it after the connection lets go of it
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        assert self.response.getheader("Content-Type", "").startswith("text/event-stream")
        self.comments = 0

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def set_timeout(self, seconds: float) -> None:
        if self.sock is not None:
            self.sock.settimeout(seconds)

    def frames(self, *, deadline: float | None = None) -> Iterator[Frame]:
        """Frames as they come (heartbeat comments counted, not yielded); ends with the stream or at ``deadline``."""
        fields: dict[str, str] = {}
        while deadline is None or time.monotonic() < deadline:
            line = self.response.readline()
            if not line:
                return
            text = line.decode("utf-8").rstrip("\r\n")
            if text == "":
                if fields:
                    yield Frame(fields["id"], fields["event"], json.loads(fields["data"]), fields["data"])
                    fields = {}
                continue
            if text.startswith(":"):
                self.comments += 1
                continue
            name, _, value = text.partition(": ")
            assert name not in fields, f"field {name} twice in one frame"
            fields[name] = value

    def read_for(self, seconds: float) -> list[Frame]:
        """The frames that come within ``seconds`` (the stream's heartbeats or a read timeout end the wait)."""
        deadline = time.monotonic() + seconds
        taken: list[Frame] = []
        self.set_timeout(seconds)
        try:
            for frame in self.frames(deadline=deadline):
                taken.append(frame)
        except TimeoutError:
            pass
        return taken

    def frames_for(self, count: int, *, quiet_seconds: float = 0.5) -> list[Frame]:
        """The next ``count`` frames, then checks that no other comes within ``quiet_seconds``."""
        taken: list[Frame] = []
        stream = self.frames()
        while len(taken) < count:
            taken.append(next(stream))
        self.set_timeout(quiet_seconds)
        try:
            extra = next(stream, None)
        except TimeoutError:
            return taken
        raise AssertionError(f"one frame more than expected: {extra}")

    def next(self) -> Frame:
        return next(self.frames())

    def until(self, event_type: str) -> list[Frame]:
        """Frames up to and including the next one of ``event_type``."""
        taken: list[Frame] = []
        for frame in self.frames():
            taken.append(frame)
            if frame.event == event_type:
                return taken
        raise AssertionError(f"the stream ended before {event_type}: {[f.event for f in taken]}")

    def turn(self) -> list[Frame]:
        return self.until("turn_end")


def payloads(frames: Sequence[Frame]) -> list[dict[str, Any]]:
    return [frame.data for frame in frames]
