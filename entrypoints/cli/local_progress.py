"""The local model's loading and prompt-reading progress: one line on stderr, on a terminal, until the first token."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Final, TextIO

from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.adapters.llamacpp.progress import LocalProgress
from ironhive.cli.render import color_enabled
from ironhive.ports.chat import ChatMessage, ChatOptions, ChatResponse, ChatUpdate

ERASE_LINE: Final = "\r\x1b[2K"
"""Back to the start of the line and erase it (every terminal ironhive's rich output runs on understands it)."""
_SPINNER: Final = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ASCII_SPINNER: Final = "|/-\\"


def progress_text(report: LocalProgress) -> str:
    """What a report says: ``Loading the local model… 45%``, ``Reading the prompt… 512/1,834 tokens``, ..."""
    done, total = report.done, max(report.total, 1)
    if report.stage == "loading":
        if done >= total:
            return "Local model loaded; reading the prompt…"
        return f"Loading the local model… {done * 100 // total}%"
    if done >= total:
        return f"Read the prompt ({total:,} tokens); writing the answer…"
    return f"Reading the prompt… {done:,}/{total:,} tokens"


class LocalProgressLine:
    """Shows the latest progress report as one line on ``stream``, erased by :meth:`clear`.

    Writes nothing at all unless ``stream`` is a terminal, so scripts, CI logs and pipes never see it (and a JSON
    answer on stdout never shares its stream). Reports arrive from the client's I/O thread, :meth:`clear` from the
    event loop: a lock keeps their writes whole.

    Args:
        stream: Where the line goes (stderr).
        width: The terminal's width (asked of ``stream`` when omitted); the line is cut to fit, since a wrapped line
            could not be erased.
    """

    def __init__(self, stream: TextIO, *, width: int | None = None) -> None:
        self._stream = stream
        self._enabled = _is_terminal(stream)
        self._escapes = color_enabled(stream)  # NO_COLOR: the line is blanked with spaces, not an erase sequence
        self._width = width
        self._lock = threading.Lock()
        self._shown = False
        self._paused = 0
        self._frame = 0
        self._spinner = _SPINNER if _can_encode(stream, _SPINNER) else _ASCII_SPINNER

    @property
    def shown(self) -> bool:
        """Whether a line is on the terminal now."""
        return self._shown

    def report(self, report: LocalProgress) -> None:
        """Show ``report`` in place of the line shown before (the client's ``on_progress`` callback)."""
        if not self._enabled:
            return
        with self._lock:
            if self._paused:
                return
            spinner = self._spinner[self._frame % len(self._spinner)]
            self._frame += 1
            line = f"{spinner} {progress_text(report)}"[: max(1, self._columns() - 1)]
            self._write(ERASE_LINE + line)
            self._shown = True

    def clear(self) -> None:
        """Erase the line, if one is shown (the first token has arrived, or the call has ended)."""
        with self._lock:
            if self._shown:
                self._write(ERASE_LINE)
                self._shown = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Show nothing meanwhile (a caller shows its own status), and erase what was shown before."""
        self.clear()
        with self._lock:
            self._paused += 1
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1

    def _write(self, text: str) -> None:
        if not self._escapes:
            text = text.replace(ERASE_LINE, "\r" + " " * (self._columns() - 1) + "\r")
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stderr must not end a generation
            self._stream.write(text)
            self._stream.flush()

    def _columns(self) -> int:
        if self._width is not None:
            return self._width
        try:
            return os.get_terminal_size(self._stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80


class ProgressLlamaCppChatClient(LlamaCppChatClient):
    """A LlamaCppChatClient that shows its progress on a :class:`LocalProgressLine`.

    The line is erased when the first update of a reply arrives and when a call ends, however it ends (an answer, an
    error, a crash, a cancelled turn). While the model is warmed up the line stays quiet: the caller shows its own
    status then. Takes the arguments of :class:`LlamaCppChatClient` but ``on_progress``.

    Args:
        line: Where progress is shown.
        model_path: See :class:`LlamaCppChatClient`.
        n_ctx: See :class:`LlamaCppChatClient`.
        extra_buffer_types: See :class:`LlamaCppChatClient`.
    """

    def __init__(
        self,
        *,
        line: LocalProgressLine,
        model_path: Path | None = None,
        n_ctx: int | None = None,
        extra_buffer_types: bool | None = None,
    ) -> None:
        super().__init__(
            model_path=model_path, n_ctx=n_ctx, extra_buffer_types=extra_buffer_types, on_progress=line.report
        )
        self._line = line

    async def warm_up(self) -> None:
        """Load the model now, showing no progress line (see the class docstring)."""
        with self._line.paused():
            await super().warm_up()

    def count(self, text: str) -> int:
        """Tokens of ``text``; the first count loads the model (its progress is erased afterwards)."""
        try:
            return super().count(text)
        finally:
            self._line.clear()

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """See :meth:`LlamaCppChatClient.get_response`; the progress line is erased when it returns or raises."""
        try:
            return await super().get_response(messages, options)
        finally:
            self._line.clear()

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        """See :meth:`LlamaCppChatClient.get_streaming_response`; the line is erased before the first update."""
        return self._erasing(super().get_streaming_response(messages, options))

    async def _erasing(self, updates: AsyncIterator[ChatUpdate]) -> AsyncGenerator[ChatUpdate, None]:
        try:
            async for update in updates:
                self._line.clear()
                yield update
        finally:
            self._line.clear()
            if isinstance(updates, AsyncGenerator):
                await updates.aclose()  # stops the generation now if the reader left early


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def _can_encode(stream: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True
