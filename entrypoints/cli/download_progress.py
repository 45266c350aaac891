"""Progress of a long download (a model file) on stderr: a bar where colour is allowed, a few plain lines otherwise."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Final, TextIO

from ironhive.cli.render import color_enabled

_STEP_PERCENT: Final = 10
_STEP_BYTES_UNKNOWN_TOTAL: Final = 100 * 1024 * 1024


class DownloadProgress:
    """Reports bytes done of a download on stderr; nothing at all when nothing is downloaded.

    Where escape sequences are allowed (:func:`~ironhive.cli.render.color_enabled`: a terminal, without ``--plain``
    or ``NO_COLOR``) a rich progress bar (size, speed, time left) is drawn and redrawn. Elsewhere (a log file, a
    pipe, CI, ``NO_COLOR``) a plain line is written when the download starts, at every tenth of it (every 100 MiB when
    the size is unknown) and when it ends, so a log shows that a long pause is a download and how far it got.
    """

    def __init__(self, description: str, stream: TextIO | None = None) -> None:
        self._description = description
        self._stream = stream
        self._progress: Any = None
        self._task: Any = None
        self._plain_started = False
        self._plain_step = -1
        self._last: tuple[int, int | None] | None = None

    def __enter__(self) -> DownloadProgress:
        return self

    def update(self, done: int, total: int | None) -> None:
        """Called by the downloader as bytes arrive."""
        stream = self._stream or sys.stderr
        self._last = (done, total)
        if self._progress is None and not self._plain_started and not color_enabled(stream):
            self._plain_started = True
            self._plain_start(stream, total)
        if self._plain_started:
            self._plain(stream, done, total)
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

            self._progress = Progress(
                *Progress.get_default_columns(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(file=stream, force_terminal=True),
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=total)
        self._progress.update(self._task, completed=done, total=total)

    def _plain_start(self, stream: TextIO, total: int | None) -> None:
        size = f" ({_size(total)})" if total else ""
        stream.write(f"{self._description}{size}…\n")

    def _plain(self, stream: TextIO, done: int, total: int | None) -> None:
        step = done * 100 // (total * _STEP_PERCENT) if total else done // _STEP_BYTES_UNKNOWN_TOTAL
        if step > self._plain_step:
            if self._plain_step >= 0 and (total is None or done < total):
                of = f" of {_size(total)} ({done * 100 // total}%)" if total else ""
                stream.write(f"{self._description}: {_size(done)}{of}\n")
            self._plain_step = step
        stream.flush()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif self._plain_started and self._last is not None:
            done, total = self._last
            stream = self._stream or sys.stderr
            ended = "done" if error is None and (total is None or done >= total) else "stopped"
            stream.write(f"{self._description}: {ended}, {_size(done)}\n")
            stream.flush()


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
