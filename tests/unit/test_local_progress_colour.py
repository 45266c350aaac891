"""The local model's progress line on a terminal: an erase sequence normally, only spaces and returns under NO_COLOR."""

from __future__ import annotations

import io

import pytest

from ironhive.adapters.llamacpp.progress import LocalProgress
from ironhive.cli.local_progress import LocalProgressLine


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("no_color", "escapes"), [("", True), ("1", False)])
def test_the_progress_line_is_erased_without_escape_sequences_under_no_color(
    monkeypatch: pytest.MonkeyPatch, no_color: str, escapes: bool
) -> None:
    monkeypatch.setenv("NO_COLOR", no_color)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    stream = Terminal()
    line = LocalProgressLine(stream, width=40)
    line.report(LocalProgress(stage="loading", done=45, total=100))
    line.clear()
    written = stream.getvalue()
    assert "Loading the local model… 45%" in written
    assert ("\x1b" in written) is escapes
    if not escapes:
        assert written.endswith("\r" + " " * 39 + "\r")
