"""The colour policy where the command line is never seen: ``--plain`` for the whole process, the download bar, the
local progress line and the interactive console (no SGR under ``NO_COLOR``, cursor movement kept)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.llamacpp.progress import LocalProgress
from ironhive.cli.download_progress import DownloadProgress
from ironhive.cli.interactive import terminal_console
from ironhive.cli.local_progress import LocalProgressLine
from ironhive.cli.render import color_enabled, set_plain_output

MIB = 1 << 20
SGR = re.compile(r"\x1b\[[0-9;:]*m")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def colour_allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    yield
    set_plain_output(False)


def download(stream: io.StringIO) -> str:
    with DownloadProgress("Downloading tiny.gguf", stream) as progress:
        progress.update(0, 4 * MIB)
        progress.update(4 * MIB, 4 * MIB)
    return stream.getvalue()


environments = st.fixed_dictionaries(
    {},
    optional={
        "NO_COLOR": st.sampled_from(["", "1", "yes"]),
        "FORCE_COLOR": st.sampled_from(["", "1"]),
        "TERM": st.sampled_from(["dumb", "xterm"]),
    },
)


@given(environments, st.booleans())
def test_plain_for_the_process_wins_over_every_environment(environ: dict[str, str], tty: bool) -> None:
    stream = Terminal() if tty else io.StringIO()
    try:
        set_plain_output(True)
        assert not color_enabled(stream, environ=environ)
    finally:
        set_plain_output(False)
    assert color_enabled(stream, environ=environ) == (
        not environ.get("NO_COLOR") and bool(environ.get("FORCE_COLOR") or (tty and environ.get("TERM") != "dumb"))
    )


@pytest.mark.usefixtures("colour_allowed")
def test_the_download_bar_is_drawn_only_where_colour_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "\x1b" in download(Terminal())  # the bar: the checks below can fail
    monkeypatch.setenv("NO_COLOR", "1")
    shown = download(Terminal())
    assert "\x1b" not in shown and shown.splitlines() == [
        "Downloading tiny.gguf (4.0 MiB)…",
        "Downloading tiny.gguf: done, 4.0 MiB",
    ]
    monkeypatch.setenv("NO_COLOR", "")
    set_plain_output(True)
    assert "\x1b" not in download(Terminal())


@pytest.mark.usefixtures("colour_allowed")
def test_the_local_progress_line_follows_plain_for_the_process() -> None:
    set_plain_output(True)
    stream = Terminal()
    line = LocalProgressLine(stream, width=40)
    line.report(LocalProgress(stage="loading", done=45, total=100))
    line.clear()
    assert "Loading the local model… 45%" in stream.getvalue() and "\x1b" not in stream.getvalue()


@pytest.mark.usefixtures("colour_allowed")
@pytest.mark.parametrize(("no_color", "styled"), [("", True), ("1", False)])
def test_the_interactive_spinner_moves_the_cursor_but_styles_only_with_colour(
    monkeypatch: pytest.MonkeyPatch, no_color: str, styled: bool
) -> None:
    monkeypatch.setenv("NO_COLOR", no_color)
    stream = Terminal()
    console = terminal_console(plain=False, stream=stream)
    with console.status("Waiting for the model…"):
        console.print("a tool line", style="cyan")
    written = stream.getvalue()
    assert "Waiting for the model…" in written and "\x1b[?25l" in written  # a live area: the cursor is driven
    assert bool(SGR.search(written)) is styled


@pytest.mark.usefixtures("colour_allowed")
def test_the_interactive_console_under_plain_writes_no_escape_sequence() -> None:
    stream = Terminal()
    console = terminal_console(plain=True, stream=stream)
    with console.status("Loading the local model m…"):
        console.print("a line", style="yellow")
    assert "a line" in stream.getvalue() and "\x1b" not in stream.getvalue()
