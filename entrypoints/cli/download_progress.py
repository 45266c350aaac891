"""A progress bar on stderr for long downloads (a model file), shown only on a terminal."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any


class DownloadProgress:
    """Reports bytes done of a download; silent when stderr is not a terminal or nothing is downloaded."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> DownloadProgress:
        return self

    def update(self, done: int, total: int | None) -> None:
        """Called by the downloader as bytes arrive."""
        if not sys.stderr.isatty():
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

            self._progress = Progress(
                *Progress.get_default_columns(), DownloadColumn(), TransferSpeedColumn(), console=Console(stderr=True)
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=total)
        self._progress.update(self._task, completed=done, total=total)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
