"""The conformance check: replays a golden JSON Lines transcript against a command and reports every difference.

A transcript is a ``.jsonl`` file, one JSON object per line, read top to bottom:

- line 1, the header: ``{"transcript": NAME, "description": ..., "args": [...], "script": {...}, "files": {...},
  "home": {...}}``. ``args`` follow ``ironhive run --server`` when no command is given (``{script}`` in them is the
  path of a file holding ``script``, the scripted model's steps); ``files`` are created in the command's working
  directory and ``home`` under its ``HOME`` (both fresh temporary folders), as ``{relative path: text}``.
- ``{"in": REQUEST}`` writes the request as one compact line; ``{"in_raw": TEXT}`` writes ``TEXT`` and a newline.
- ``{"out": PATTERN}`` reads the next event line, which must match; with ``"repeat": true`` it matches zero or more
  events in a row.
- ``{"quiet": SECONDS}``: no event arrives within that time. ``{"close": true}`` ends the command's input.
- ``{"exit": CODE}``: the output ends and the command exits with ``CODE``. Without it the check closes the input at the
  end of the transcript and expects exit code 0 and no further event.
- ``{"note": TEXT}`` lines document the transcript and are skipped.

A pattern is the event as JSON, matched exactly (the same property names, equal values) except for placeholders:
``"$any"`` (any value), ``{"$regex": RE}`` (a string fully matching ``RE``), ``{"$type": T}`` (any value of the JSON
type ``T``: string, integer, number, boolean, null, array, object); either object form may add ``"$save": NAME`` to
remember the value, and ``{"$saved": NAME}`` stands for a remembered value in later patterns and requests. Every event
line must also be compact JSON with ``type`` first. Differences name the transcript line (``plain-turn.jsonl:5: ...``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ironhive.protocol.peer import CommandPeer

DEFAULT_TIMEOUT_SECONDS = 15.0
"""How long the check waits for each expected event or for the command's exit."""

TRANSCRIPT_SUFFIX = ".jsonl"
_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}
_STEP_KEYS = ("in", "in_raw", "out", "quiet", "close", "exit")


class TranscriptError(ValueError):
    """A transcript that cannot be read (the message names the file and line)."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the command's behaviour differs from the transcript.

    Attributes:
        line: The transcript line (1-based) that did not hold.
        message: What was expected and what happened.
    """

    line: int
    message: str


@dataclass(frozen=True, slots=True)
class Step:
    """One transcript line after the header."""

    line: int
    kind: str
    value: Any
    repeat: bool = False


@dataclass(frozen=True, slots=True)
class Transcript:
    """A parsed transcript.

    Attributes:
        name: The header's ``transcript`` name.
        path: Where it was read from.
        description: What behaviour it pins.
        args: Arguments after ``ironhive run --server`` for the default command.
        script: The scripted model's script (``{"steps": [...]}``), or None.
        files: Files to create in the working directory.
        home: Files to create under ``HOME``.
        steps: The lines after the header, in order.
    """

    name: str
    path: Path
    description: str
    args: tuple[str, ...]
    script: Any
    files: Mapping[str, str]
    home: Mapping[str, str]
    steps: tuple[Step, ...]


@dataclass
class CheckResult:
    """The outcome of one replay.

    Attributes:
        transcript: The transcript replayed.
        command: The command it ran.
        differences: Everything that did not hold, in transcript order (empty: the command conforms).
        exit_code: The command's exit code (None when it had to be killed).
        stderr: The command's standard error.
        lines: Every line the command wrote to stdout, in order.
    """

    transcript: Transcript
    command: list[str]
    differences: list[Difference] = field(default_factory=list)
    exit_code: int | None = None
    stderr: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Whether the command matched every line."""
        return not self.differences

    def report(self) -> str:
        """The differences as lines ``<file>:<line>: <message>``, or a one-line pass."""
        if self.passed:
            return f"{self.transcript.path.name}: ok ({len(self.transcript.steps)} lines)\n"
        lines = [f"{self.transcript.path.name}:{d.line}: {d.message}" for d in self.differences]
        if self.stderr.strip():
            lines.append("stderr of the command (last lines):")
            lines.extend("  " + line for line in self.stderr.strip().splitlines()[-10:])
        return "\n".join(lines) + "\n"


def shipped_transcripts() -> list[Path]:
    """The golden transcripts shipped in ``ironhive.protocol`` (``transcripts/*.jsonl``), sorted by name."""
    folder = resources.files("ironhive.protocol").joinpath("transcripts")
    return sorted(Path(str(item)) for item in folder.iterdir() if item.name.endswith(TRANSCRIPT_SUFFIX))


def find_transcript(name: str) -> Path:
    """A transcript path: ``name`` itself when it is a file, else the shipped transcript of that name.

    Raises:
        TranscriptError: Neither exists.
    """
    path = Path(name)
    if path.is_file():
        return path
    stem = name.removesuffix(TRANSCRIPT_SUFFIX)
    for shipped in shipped_transcripts():
        if shipped.stem == stem:
            return shipped
    known = ", ".join(p.stem for p in shipped_transcripts())
    raise TranscriptError(f"No transcript file {name!r} and no shipped transcript of that name (shipped: {known}).")


def load_transcript(path: Path) -> Transcript:
    """Read and check a transcript file.

    Raises:
        TranscriptError: A line is not JSON, the header is missing, or a line has no known step.
    """
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except ValueError as error:
            raise TranscriptError(f"{path.name}:{number}: not JSON ({error})") from None
        if not isinstance(value, dict):
            raise TranscriptError(f"{path.name}:{number}: expected a JSON object")
        rows.append((number, value))
    if not rows or "transcript" not in rows[0][1]:
        raise TranscriptError(f'{path.name}:1: the first line must be the header {{"transcript": NAME, ...}}')
    header = rows[0][1]
    steps: list[Step] = []
    for number, value in rows[1:]:
        kinds = [key for key in _STEP_KEYS if key in value]
        if not kinds and set(value) <= {"note"}:
            continue
        if len(kinds) != 1:
            raise TranscriptError(f"{path.name}:{number}: expected exactly one of {', '.join(_STEP_KEYS)}")
        steps.append(Step(number, kinds[0], value[kinds[0]], repeat=bool(value.get("repeat", False))))
    return Transcript(
        name=str(header["transcript"]),
        path=path,
        description=str(header.get("description", "")),
        args=tuple(str(arg) for arg in header.get("args", ())),
        script=header.get("script"),
        files=dict(header.get("files", {})),
        home=dict(header.get("home", {})),
        steps=tuple(steps),
    )


def match(pattern: Any, value: Any, saved: dict[str, Any], where: str = "") -> list[str]:
    """Compare ``value`` with ``pattern`` (placeholders allowed); returns the mismatches, each naming its place.

    Args:
        pattern: The expected JSON value, possibly holding placeholders.
        value: The actual JSON value.
        saved: Remembered values (``$save`` adds to it, ``$saved`` reads it).
        where: The path of ``value`` in the event, for messages.
    """
    label = where or "the event"
    if pattern == "$any":
        return []
    if isinstance(pattern, dict) and any(key.startswith("$") for key in pattern):
        return _match_placeholder(pattern, value, saved, label)
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return [f"{label}: expected an object, got {_show(value)}"]
        if isinstance(pattern.get("type"), str) and value.get("type") != pattern["type"]:
            return [f"{label}: expected a {pattern['type']}, got a {_show(value.get('type'))}"]
        problems = [f"{_join(where, key)}: missing" for key in pattern if key not in value]
        problems += [
            f"{_join(where, key)}: unexpected (value {_show(value[key])})" for key in value if key not in pattern
        ]
        for key in pattern:
            if key in value:
                problems += match(pattern[key], value[key], saved, _join(where, key))
        return problems
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(value) != len(pattern):
            return [f"{label}: expected {_show(pattern)}, got {_show(value)}"]
        return [
            p for i, (a, b) in enumerate(zip(pattern, value, strict=True)) for p in match(a, b, saved, f"{where}[{i}]")
        ]
    if type(pattern) is not type(value) or pattern != value:
        return [f"{label}: expected {_show(pattern)}, got {_show(value)}"]
    return []


def substitute(value: Any, saved: Mapping[str, Any]) -> Any:
    """``value`` with every ``{"$saved": NAME}`` replaced by the remembered value."""
    if isinstance(value, dict):
        if set(value) == {"$saved"}:
            return saved.get(value["$saved"])
        return {key: substitute(item, saved) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, saved) for item in value]
    return value


def default_command(transcript: Transcript, script_path: Path) -> list[str]:
    """``ironhive run --server`` (this interpreter's ironhive) with the transcript's arguments."""
    return [sys.executable, "-m", "ironhive", "run", "--server", *_fill(transcript.args, script_path)]


def check(
    transcript: Transcript, command: Sequence[str] = (), *, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> CheckResult:
    """Replay ``transcript`` against ``command`` (default: ``ironhive run --server`` with its arguments).

    The command runs in a fresh temporary working directory (holding the transcript's ``files``) with ``HOME`` set to
    another one (holding ``home``); ``{script}``, ``{work}`` and ``{home}`` in the command are replaced by the script
    file and those folders.

    Args:
        transcript: The transcript to replay.
        command: The program and its arguments; empty for the default.
        timeout: Seconds to wait for each expected event and for the exit.

    Returns:
        The result, with every difference found.
    """
    with tempfile.TemporaryDirectory(prefix="ironhive-conformance-") as scratch:
        root = Path(scratch)
        work, home = root / "work", root / "home"
        for base, files in ((work, transcript.files), (home, transcript.home)):
            base.mkdir()
            for relative, text in files.items():
                target = base / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        script_path = root / "script.json"
        script_path.write_text(json.dumps(transcript.script if transcript.script is not None else {"steps": []}))
        argv = (
            [part.replace("{work}", str(work)).replace("{home}", str(home)) for part in _fill(command, script_path)]
            if command
            else default_command(transcript, script_path)
        )
        environment = {key: value for key, value in os.environ.items() if not key.startswith("IRONHIVE_")}
        environment.update({"HOME": str(home), "USERPROFILE": str(home), "NO_COLOR": "1"})
        result = CheckResult(transcript=transcript, command=argv)
        with CommandPeer(argv, work, environment) as peer:
            _Replay(transcript, peer, result, timeout).run()
        result.exit_code = peer.exit_code
        result.stderr = peer.stderr_text
        return result


class _Replay:
    """Walks a transcript against a running peer, collecting differences."""

    def __init__(self, transcript: Transcript, peer: CommandPeer, result: CheckResult, timeout: float) -> None:
        self._transcript = transcript
        self._peer = peer
        self._result = result
        self._timeout = timeout
        self._saved: dict[str, Any] = {}
        self._pending: tuple[str, Any] | None = None  # an event read ahead by a repeat step

    def run(self) -> None:
        steps = self._transcript.steps
        exited = False
        for step in steps:
            if step.kind == "in":
                self._peer.write(json.dumps(substitute(step.value, self._saved), separators=(",", ":")) + "\n")
            elif step.kind == "in_raw":
                self._peer.write(str(step.value) + "\n")
            elif step.kind == "close":
                self._peer.close_input()
            elif step.kind == "quiet":
                event = self._next(float(step.value))
                if event is not None:
                    self._differ(step.line, f"expected no event for {step.value}s, got {event[0]}")
            elif step.kind == "out":
                self._expect(step)
            elif step.kind == "exit":
                self._finish(step.line, int(step.value))
                exited = True
        if not exited:
            self._peer.close_input()
            self._finish((steps[-1].line if steps else 1), 0)

    def _expect(self, step: Step) -> None:
        if step.repeat:
            while True:
                event = self._next(self._timeout)
                if event is None:
                    return
                scratch = dict(self._saved)
                if match(step.value, event[1], scratch):
                    self._pending = event
                    return
                self._saved = scratch
                self._check_line(step.line, event[0])
        event = self._next(self._timeout)
        if event is None:
            ended = "the output ended" if self._peer.output_ended else f"nothing came within {self._timeout:g}s"
            self._differ(step.line, f"expected {_show(step.value)}; {ended}")
            return
        self._check_line(step.line, event[0])
        problems = match(step.value, event[1], self._saved)
        if problems:
            self._differ(step.line, "; ".join(problems) + f" (event: {event[0]})")

    def _finish(self, line: int, code: int) -> None:
        deadline = time.monotonic() + self._timeout
        while (event := self._next(max(0.0, deadline - time.monotonic()))) is not None:
            self._differ(line, f"unexpected event before the end of the output: {event[0]}")
        if not self._peer.output_ended:
            self._differ(line, f"the output did not end within {self._timeout:g}s")
            return
        exit_code = self._peer.wait(max(0.1, deadline - time.monotonic()))
        if exit_code is None:
            self._differ(line, f"the command did not exit within {self._timeout:g}s of its output ending")
        elif exit_code != code:
            self._differ(line, f"expected exit code {code}, got {exit_code}")

    def _next(self, timeout: float) -> tuple[str, Any] | None:
        if self._pending is not None:
            event, self._pending = self._pending, None
            return event
        line = self._peer.read(timeout)
        if line is None:
            return None
        self._result.lines.append(line)
        try:
            return line, json.loads(line)
        except ValueError:
            return line, None

    def _check_line(self, step_line: int, raw: str) -> None:
        try:
            value = json.loads(raw)
        except ValueError:
            self._differ(step_line, f"the line is not JSON: {raw[:200]}")
            return
        if not isinstance(value, dict) or next(iter(value), None) != "type":
            self._differ(step_line, f'the line is not an object with "type" first: {raw[:200]}')
        elif raw != json.dumps(value, separators=(",", ":"), ensure_ascii=False):
            self._differ(step_line, f"the line is not compact JSON: {raw[:200]}")

    def _differ(self, line: int, message: str) -> None:
        self._result.differences.append(Difference(line, message))


def _match_placeholder(pattern: dict[str, Any], value: Any, saved: dict[str, Any], label: str) -> list[str]:
    if "$saved" in pattern:
        name = pattern["$saved"]
        if name not in saved:
            return [f"{label}: nothing was saved as {name!r} before this line"]
        return (
            []
            if saved[name] == value
            else [f"{label}: expected the saved {name} {_show(saved[name])}, got {_show(value)}"]
        )
    if "$regex" in pattern:
        if not isinstance(value, str) or re.fullmatch(pattern["$regex"], value) is None:
            return [f"{label}: expected a string matching {pattern['$regex']!r}, got {_show(value)}"]
    elif "$type" in pattern:
        kinds = _JSON_TYPES.get(pattern["$type"], ())
        if not isinstance(value, kinds) or (isinstance(value, bool) and pattern["$type"] != "boolean"):
            return [f"{label}: expected a JSON {pattern['$type']}, got {_show(value)}"]
    else:
        return [f"{label}: unknown placeholder {_show(pattern)}"]
    if "$save" in pattern:
        saved[pattern["$save"]] = value
    return []


def _fill(parts: Sequence[str], script_path: Path) -> list[str]:
    return [part.replace("{script}", str(script_path)) for part in parts]


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 200 else text[:197] + "..."


def iter_results(
    names: Sequence[str], command: Sequence[str] = (), *, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> Iterator[CheckResult]:
    """Check each named transcript (a path or a shipped name) in turn."""
    for name in names:
        yield check(load_transcript(find_transcript(name)), command, timeout=timeout)
