"""Interactive mode (``ironhive`` without a prompt): streamed answers, slash commands and statistics."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ironhive import __version__
from ironhive.adapters.provider_registry import provider_names_help
from ironhive.cli.render import Renderer, TextRenderer, color_enabled, rich_console
from ironhive.cli.statistics import SessionStatistics
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import IronHiveError
from ironhive.domain.turn import TurnCompleted

if TYPE_CHECKING:
    from rich.console import Console

    from ironhive.agent_factory import Agent, AgentSettings
    from ironhive.cli.line_editor import EditingLineReader, TerminalMenu
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.ports.chat import Preloadable

EXIT_INTERRUPTED = 130
TWICE_SECONDS = 1.0
"""Two Ctrl+C within this many seconds leave."""

HELP = """\
Commands:
  /help       show this help
  /model      how to use another model or provider
  /sessions   list the recent sessions of this project
  /clear      start a new conversation
  exit, quit  leave (or Ctrl+D on an empty line)
Keys: Enter sends, Alt+Enter (or Esc Enter) starts a new line, Up/Down and Ctrl+R search earlier prompts of this
project. Ctrl+C cancels a running request, clears a line with text, and twice within a second leaves."""

MODEL_HELP = f"""\
The model is chosen at start-up. To switch, leave and start again with -m/--model <model> (or <provider>/<model>)
and/or --provider <name>, e.g.: ironhive --provider local
Providers (aliases): {provider_names_help()}"""


@dataclass(frozen=True, kw_only=True, slots=True)
class InteractiveRequest:
    """How the interactive session was started."""

    model: str | None
    provider: str | None
    plain: bool
    show_thinking: bool
    show_tokens: bool
    planning: bool
    session: SessionRequest = field(default_factory=SessionRequest)


def terminal_console(*, plain: bool, stream: TextIO | None = None) -> Console:
    """The rich console of the interactive mode on ``stream`` (stdout by default).

    With ``--plain`` it writes no escape sequence at all. Otherwise, on a terminal, the spinner and the live answer
    move the cursor and erase lines, and styles (SGR: colour, bold, dim) are written only where
    :func:`~ironhive.cli.render.color_enabled` allows them: none under ``NO_COLOR`` or ``TERM=dumb``.
    """
    from rich.console import Console

    if plain:
        return rich_console(stream, plain=True, highlight=False, emoji=False)
    color = color_enabled(stream or sys.stdout)
    return Console(file=stream, highlight=False, emoji=False, color_system="auto" if color else None)


def line_editing(plain: bool) -> bool:
    """Whether prompts get line editing: not with ``--plain``, and only with a terminal on stdin and stdout."""
    return not plain and sys.stdin.isatty() and sys.stdout.isatty()


class InteractiveSession:
    """One interactive session: reads prompts, runs turns, handles slash commands and Ctrl+C.

    Ctrl+C: during a turn it cancels the turn ("Cancelled."); at the prompt it clears a line with text, and on an
    empty line it says how to leave; two within ``TWICE_SECONDS`` leave (exit code 130), whether the turn has finished
    cancelling or not. Ctrl+D on an empty line, ``exit`` and ``quit`` leave with 0. Each case prints one message.
    """

    def __init__(
        self,
        loop: AgentLoop,
        statistics: SessionStatistics,
        *,
        request: InteractiveRequest,
        binding: SessionBinding,
        project: Path,
        console: Console,
        reader: EditingLineReader | None = None,
        menu: TerminalMenu | None = None,
    ) -> None:
        self._agent = loop
        self._binding = binding
        self._project = project
        self._statistics = statistics
        self._request = request
        self._console = console
        self._reader = reader
        self._menu = menu
        self._turn_task: asyncio.Task[None] | None = None
        self._read_task: asyncio.Task[object] | None = None
        self._last_interrupt: float | None = None
        self._leaving = False

    def _renderer(self) -> Renderer:
        if self._request.plain or not sys.stdout.isatty():
            return TextRenderer(show_thinking=self._request.show_thinking, show_tokens=False, plain=True)
        from ironhive.cli.live_markdown import LiveMarkdownRenderer

        return LiveMarkdownRenderer(self._console, show_thinking=self._request.show_thinking)

    def run(self, event_loop: asyncio.AbstractEventLoop, banner: str) -> int:
        """Run the prompt loop until exit; returns the exit code."""
        self._console.print(banner, markup=False)
        if self._reader is None:
            return self._prompt_loop(event_loop)
        # With the line editor, one handler takes every SIGINT of the session: a Ctrl+C that arrives between a
        # turn and the next prompt is then handled too, when the next prompt starts (never a KeyboardInterrupt
        # raised wherever the main thread happens to be).
        event_loop.add_signal_handler(signal.SIGINT, self._interrupt)
        try:
            return self._prompt_loop(event_loop)
        finally:
            event_loop.remove_signal_handler(signal.SIGINT)

    def _prompt_loop(self, event_loop: asyncio.AbstractEventLoop) -> int:
        while True:
            try:
                line = self._read(event_loop).strip()
            except EOFError:
                break
            except (KeyboardInterrupt, asyncio.CancelledError):
                if self._twice():
                    return self._leave(event_loop, EXIT_INTERRUPTED)
                self._console.print("Press Ctrl+C again to leave, or type exit.", style="dim")
                continue
            if not line:
                continue
            if line.lower() in {"exit", "quit"}:
                break
            if line.startswith("/"):
                self._command(line, event_loop)
                continue
            with contextlib.suppress(asyncio.CancelledError):  # a Ctrl+C after the turn had handled its own
                event_loop.run_until_complete(self._turn(line))
            if self._leaving:
                return self._leave(event_loop, EXIT_INTERRUPTED)
        return self._leave(event_loop, 0)

    def _read(self, event_loop: asyncio.AbstractEventLoop) -> str:
        """One prompt: by the line editor (a SIGINT then acts as the Ctrl+C key), else by ``input()``."""
        if self._reader is None:
            return input("> ")
        return event_loop.run_until_complete(self._edited_line(self._reader))

    async def _edited_line(self, reader: EditingLineReader) -> str:
        self._read_task = asyncio.current_task()
        try:
            return await reader.read("> ")
        finally:
            self._read_task = None

    def _interrupt(self) -> None:
        """Ctrl+C as a signal (during a turn, or at the prompt when sent by ``kill``) or as a key in the menu."""
        task = self._turn_task
        if task is None:
            if self._reader is not None and self._reader.interrupt():
                return  # the prompt acts as on the Ctrl+C key
            if self._read_task is not None:  # the prompt is not drawn yet: the read ends as on Ctrl+C
                self._read_task.cancel()
            return
        if self._twice():
            self._leaving = True
        if not task.cancelling():  # a second cancel would break the cancelled turn's own clean-up
            task.cancel()

    def _twice(self) -> bool:
        """Count one Ctrl+C; whether the one before was less than ``TWICE_SECONDS`` ago."""
        now = time.monotonic()
        twice = self._last_interrupt is not None and now - self._last_interrupt <= TWICE_SECONDS
        self._last_interrupt = now
        return twice

    def _leave(self, event_loop: asyncio.AbstractEventLoop, code: int) -> int:
        event_loop.run_until_complete(self._binding.close("user_exit"))
        self._print_statistics()
        return code

    def _command(self, line: str, event_loop: asyncio.AbstractEventLoop) -> None:
        name = line.split()[0].lower()
        if name == "/help":
            self._console.print(HELP, markup=False)
        elif name == "/model":
            self._console.print(MODEL_HELP, markup=False)
        elif name == "/clear":
            self._binding = event_loop.run_until_complete(self._new_session())
            self._console.print(f"Started a new conversation (session {self._binding.session_id}).", style="dim")
        elif name == "/sessions":
            self._console.print(event_loop.run_until_complete(self._sessions_text()), markup=False)
        else:
            self._console.print(f"Unknown command {name}. Type /help for the commands.", markup=False)

    async def _new_session(self) -> SessionBinding:
        await self._binding.close("user_exit")
        binding = self._binding
        return await SessionBinding.open(
            self._agent, SessionRequest(), model=self._statistics.model, store=binding.store, log=binding.log
        )

    async def _sessions_text(self) -> str:
        sessions = await self._binding.store.list(limit=10)
        if not sessions:
            return "No sessions yet."
        lines = [f"{'ID':<22} {'STATUS':<8} {'MESSAGES':>8}  FIRST MESSAGE"]
        for info in sessions:
            marker = "*" if info.id == self._binding.session_id else " "
            first = (info.first_message or "").replace("\n", " ")[:50]
            lines.append(f"{info.id:<21}{marker} {info.status:<8} {info.message_count:>8}  {first}")
        return "\n".join([*lines, "Resume one later with: ironhive -r <id>"])

    async def _turn(self, prompt: str) -> None:
        """Run one turn; a Ctrl+C cancels it (see ``_interrupt``)."""
        from ironhive.cli.live_markdown import LiveMarkdownRenderer

        renderer = self._renderer()
        task = asyncio.current_task()
        assert task is not None
        self._turn_task = task
        if self._menu is not None and isinstance(renderer, LiveMarkdownRenderer):
            self._menu.renderer = renderer
        loop = asyncio.get_running_loop()
        if self._reader is None:  # else the session's handler is in place
            loop.add_signal_handler(signal.SIGINT, self._interrupt)
        renderer.start(None)
        try:
            async with aclosing(self._binding.recording(prompt, self._agent.run_streaming(prompt))) as chunks:
                async for chunk in chunks:
                    if isinstance(chunk, TurnCompleted):
                        renderer.finish(chunk.turn, None)
                        self._statistics.add(chunk.turn.usage)
                        if self._request.show_tokens:
                            usage = chunk.turn.usage
                            self._console.print(
                                f"Tokens: {usage.input_tokens or 0} in / {usage.output_tokens or 0} out / "
                                f"{usage.total_tokens or 0} total",
                                style="dim",
                            )
                    else:
                        renderer.chunk(chunk)
        except asyncio.CancelledError:
            while task.uncancel():
                pass
            renderer.fail("cancelled", EXIT_INTERRUPTED)  # the one message: "Cancelled."
        except IronHiveError as error:
            renderer.fail(str(error), 1)
        except Exception as error:  # the session goes on after any failure of one turn
            renderer.fail(f"{type(error).__name__}: {error}", 1)
        finally:
            if self._reader is None:
                loop.remove_signal_handler(signal.SIGINT)
            self._turn_task = None
            if self._menu is not None:
                self._menu.renderer = None

    def _print_statistics(self) -> None:
        from rich.table import Table

        table = Table(title="Session statistics", show_header=False)
        for label, value in self._statistics.rows():
            table.add_row(label, value)
        self._console.print(table)


def run_interactive(request: InteractiveRequest, *, environ: Mapping[str, str]) -> int:
    """Start the interactive mode; returns the exit code."""
    from ironhive.adapters.console_approval import ConsoleApprovalService
    from ironhive.cli.console_settings import console_settings
    from ironhive.configuration import load_configuration
    from ironhive.domain.permissions.modes import Mode

    project = Path.cwd()
    console = terminal_console(plain=request.plain)
    session: InteractiveSession | None = None
    reader: EditingLineReader | None = None
    menu: TerminalMenu | None = None
    if line_editing(request.plain):
        from ironhive.cli.line_editor import EditingLineReader, TerminalMenu, history_path

        # Ctrl+C in the approval menu is a key (the terminal is in raw mode): it cancels the turn like the signal.
        reader = EditingLineReader(
            history_path(Path.home(), project),
            color=color_enabled(sys.stdout, plain=request.plain),
            on_interrupt=lambda: session._interrupt() if session is not None else None,
        )
        menu = TerminalMenu(console, reader)
        if reader.warning is not None:
            console.print(reader.warning, style="yellow", markup=False)
    event_loop = asyncio.new_event_loop()
    # Ctrl+C at the prompt must reach the main thread, which is blocked reading the terminal: a worker thread that
    # took the signal instead would leave that read hanging, so worker threads block SIGINT.
    event_loop.set_default_executor(
        ThreadPoolExecutor(initializer=signal.pthread_sigmask, initargs=(signal.SIG_BLOCK, {signal.SIGINT}))
    )
    try:
        try:
            settings = console_settings(
                load_configuration(environ, project, ask=True).config,
                provider=request.provider,
                model=request.model,
                project=project,
                # The menu is read by the line editor (not a thread reading stdin, which a cancelled turn would leave
                # behind, stealing the next prompt's input): keep console=menu where these settings are shared.
                approval=ConsoleApprovalService(console=menu),
                initial_mode=Mode.PLANNING if request.planning else Mode.WORKING,
            )
            agent, release = hold_agent(event_loop, settings)
            binding = event_loop.run_until_complete(agent.open_session(request.session))
        except IronHiveError as error:
            sys.stderr.write(f"Error: {error}\n")
            return 1
        if isinstance(agent.client, Preloadable):
            loading = f"Loading the local model {agent.provider.model}…"
            if request.plain:
                sys.stderr.write(loading + "\n")
            with terminal_console(plain=request.plain, stream=sys.stderr).status(loading):
                event_loop.run_until_complete(agent.client.warm_up())
        choice = agent.provider
        statistics = SessionStatistics(model=choice.model, local=choice.name == "lmsupply")
        mode = " (planning mode: read-only tools)" if request.planning else ""
        restored = len(agent.loop.history)
        resumed = f"\nResumed session {binding.session_id} ({restored} messages)." if restored else ""
        banner = (
            f"ironhive {__version__} — {choice.name} / {choice.model}{mode} — session {binding.session_id}{resumed}\n"
            "Type a request (Alt+Enter for a new line), /help for commands and keys, exit or Ctrl+D to leave."
        )
        session = InteractiveSession(
            agent.loop,
            statistics,
            request=request,
            binding=binding,
            project=project,
            console=console,
            reader=reader,
            menu=menu,
        )
        try:
            return session.run(event_loop, banner)
        finally:
            release()
    finally:
        event_loop.close()


def hold_agent(event_loop: asyncio.AbstractEventLoop, settings: AgentSettings) -> tuple[Agent, Callable[[], None]]:
    """Open the agent in a task that holds its plugin servers across the prompt loop; returns it and its release.

    The servers' connections must be opened and closed by one task, while the prompt loop runs the event loop once
    per turn; so one long-lived task keeps them until ``release`` is called.
    """
    from ironhive.adapters.mcp.console_trust import ConsoleTrustDecider
    from ironhive.agent_factory import open_agent

    opened: asyncio.Future[Agent] = event_loop.create_future()
    done = asyncio.Event()

    async def hold() -> None:
        async with open_agent(settings, trust=ConsoleTrustDecider()) as agent:
            opened.set_result(agent)
            await done.wait()

    holder = event_loop.create_task(hold())
    waiting: list[asyncio.Future[Any]] = [opened, holder]
    event_loop.run_until_complete(asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED))
    if not opened.done():
        holder.result()  # raises what went wrong
        raise RuntimeError("the agent could not be opened")

    def release() -> None:
        done.set()
        event_loop.run_until_complete(holder)

    return opened.result(), release
