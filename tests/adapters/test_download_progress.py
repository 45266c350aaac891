"""The CLI's download progress: plain lines when stderr is not a terminal, a rich bar when it is, nothing if unused."""

from __future__ import annotations

import io

import pytest

from ironhive.cli.download_progress import DownloadProgress

MIB = 1 << 20


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_at_start_every_tenth_and_the_end() -> None:
    stream = io.StringIO()
    with DownloadProgress("Downloading tiny.gguf", stream) as progress:
        for done in range(0, 20 * MIB + 1, MIB // 2):
            progress.update(done, 20 * MIB)

    lines = stream.getvalue().splitlines()
    assert lines[0] == "Downloading tiny.gguf (20.0 MiB)…"
    assert lines[1] == "Downloading tiny.gguf: 2.0 MiB of 20.0 MiB (10%)"
    assert lines[-2] == "Downloading tiny.gguf: 18.0 MiB of 20.0 MiB (90%)"
    assert lines[-1] == "Downloading tiny.gguf: done, 20.0 MiB"
    assert len(lines) == 11


def test_an_unknown_size_reports_every_100_mib_and_a_failure_says_stopped() -> None:
    stream = io.StringIO()
    with pytest.raises(OSError), DownloadProgress("Downloading m.gguf", stream) as progress:
        for done in range(0, 250 * MIB, 10 * MIB):
            progress.update(done, None)
        raise OSError("connection lost")

    assert stream.getvalue().splitlines() == [
        "Downloading m.gguf…",
        "Downloading m.gguf: 100.0 MiB",
        "Downloading m.gguf: 200.0 MiB",
        "Downloading m.gguf: stopped, 240.0 MiB",
    ]


def test_nothing_is_written_when_nothing_is_downloaded() -> None:
    stream = io.StringIO()
    with DownloadProgress("Downloading tiny.gguf", stream):
        pass
    assert stream.getvalue() == ""


def test_a_terminal_gets_a_progress_bar() -> None:
    stream = Terminal()
    with DownloadProgress("Downloading tiny.gguf", stream) as progress:
        progress.update(0, 4 * MIB)
        progress.update(4 * MIB, 4 * MIB)

    shown = stream.getvalue()
    assert "Downloading tiny.gguf" in shown and "4.2/4.2 MB" in shown
    assert "done," not in shown
