"""The interactive prompt: line editing, history kept per project and multi-line input, by prompt_toolkit."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.application import Application
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.output import ColorDepth, Output
    from rich.console import Console

    from ironhive.cli.live_markdown import LiveMarkdownRenderer

HISTORY_FILE = "prompt_history"


def history_path(home: Path, project: Path) -> Path:
    """The prompt history of ``project``: beside its sessions, ``~/.ironhive/projects/<hash>/prompt_history``."""
    from ironhive.adapters.sessions.store import project_directory

    return project_directory(home / ".ironhive", project) / HISTORY_FILE


class EditingLineReader:
    """prompt_toolkit: arrow keys, Emacs keys, history (Up/Down, Ctrl+R) kept per project, Esc Enter for a new line.

    Enter sends; Alt+Enter (which a terminal sends as Esc Enter) inserts a line break. Ctrl+C clears a line that has
    text and, on an empty line, ends the read with ``KeyboardInterrupt``. Questions (an approval menu) are read by a
    separate session without history, in bold, and Ctrl+C there calls ``on_interrupt`` (the interactive session
    cancels the running turn, as a Ctrl+C anywhere else during a turn does).
    """

    def __init__(self, history: Path, *, color: bool, on_interrupt: Callable[[], None]) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, History, InMemoryHistory
        from prompt_toolkit.output.color_depth import ColorDepth

        from ironhive.adapters.config.private_files import make_private_directory, open_private

        kept: History
        self.warning: str | None = None
        try:
            make_private_directory(history.parent)
            os.close(open_private(history, os.O_WRONLY | os.O_APPEND))  # owner-only before prompt_toolkit appends
            kept = FileHistory(str(history))
        except OSError as error:  # a read-only home: editing still works, the history lasts this run
            self.warning = f"Prompt history is not kept: {history}: {error.strerror or error}"
            kept = InMemoryHistory()
        depth = None if color else ColorDepth.MONOCHROME
        self._prompts: PromptSession[str] = PromptSession(
            history=kept,
            key_bindings=self._prompt_keys(),
            prompt_continuation="… ",
            color_depth=depth,
            output=None if color else uncoloured_output(),
            reserve_space_for_menu=0,  # no completion menu: do not push the scrollback up for one
        )
        self._questions: PromptSession[str] = PromptSession(
            key_bindings=self._question_keys(),
            color_depth=depth,
            output=None if color else uncoloured_output(),
            reserve_space_for_menu=0,
        )
        self._color = color
        self._on_interrupt = on_interrupt

    @staticmethod
    def _prompt_keys() -> KeyBindings:
        from prompt_toolkit.key_binding import KeyBindings

        keys = KeyBindings()

        @keys.add("escape", "enter")
        def _(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("c-c")
        def _(event: KeyPressEvent) -> None:
            _clear_or_interrupt(event.app)

        return keys

    def _question_keys(self) -> KeyBindings:
        from prompt_toolkit.key_binding import KeyBindings

        keys = KeyBindings()

        @keys.add("c-c")
        def _(event: KeyPressEvent) -> None:
            self._on_interrupt()

        return keys

    async def read(self, message: str) -> str:
        """One prompt; see the class for the keys."""
        return await self._prompts.prompt_async(message, handle_sigint=False)

    async def ask(self, question: str, default: str = "") -> str | None:
        """One answer, shown in bold (without colour: its own text) so it does not look like the chat prompt."""
        from prompt_toolkit.formatted_text import FormattedText

        try:
            return await self._questions.prompt_async(
                FormattedText([("bold" if self._color else "", question)]), default=default, handle_sigint=False
            )
        except EOFError:
            return None

    def interrupt(self) -> bool:
        """A SIGINT arrived (kill; the Ctrl+C key is a key in raw mode): act as the key; False when not reading."""
        app = self._prompts.app
        if not app.is_running or app.future is None or app.future.done():
            return False
        _clear_or_interrupt(app)
        return True


def uncoloured_output() -> Output:
    """prompt_toolkit's terminal output on stdout that writes no SGR sequence (``ESC [ … m``) at all.

    prompt_toolkit already drops colours under ``NO_COLOR``, but still writes attribute resets, bold and reverse video
    (the selection). Without colour none of them is written; cursor movement, erasing and the terminal modes (bracketed
    paste, cursor visibility, the cursor position query) remain, as line editing needs them.
    """
    import sys

    from prompt_toolkit.output.vt100 import Vt100_Output
    from prompt_toolkit.styles import Attrs

    class UncolouredOutput(Vt100_Output):
        def set_attributes(self, attrs: Attrs, color_depth: ColorDepth) -> None:
            """No style is written."""

        def reset_attributes(self) -> None:
            """Nothing was set: nothing to reset."""

    return UncolouredOutput.from_pty(sys.stdout, term=os.environ.get("TERM"))


def _clear_or_interrupt(app: Application[str]) -> None:
    """Ctrl+C at the prompt: clear a line with text; on an empty line end the read with KeyboardInterrupt."""
    if app.current_buffer.text:
        app.current_buffer.reset()
    else:
        app.exit(exception=KeyboardInterrupt(), style="class:aborting")


class TerminalMenu:
    """The approval menu of the interactive mode: the live answer is paused, then the question is read by the editor."""

    def __init__(self, console: Console, reader: EditingLineReader) -> None:
        self._console = console
        self._reader = reader
        self.renderer: LiveMarkdownRenderer | None = None

    def show(self, text: str) -> None:
        """Print the lines describing the call, below what was streamed so far."""
        if self.renderer is not None:
            self.renderer.pause()
        self._console.print(text, style="yellow", markup=False, end="")

    async def ask(self, question: str, default: str = "") -> str | None:
        """Read one answer with the line editor (its own bold prompt, no history)."""
        if self.renderer is not None:
            self.renderer.pause()
        return await self._reader.ask(question, default)
