"""Interactive mode (``ironhive`` without a prompt): streamed answers, slash commands and statistics."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ironhive import __version__
from ironhive.adapters.provider_registry import provider_names_help
from ironhive.cli.render import Renderer, TextRenderer
from ironhive.cli.statistics import SessionStatistics
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import IronHiveError
from ironhive.domain.turn import TurnCompleted

if TYPE_CHECKING:
    from ironhive.agent_factory import Agent, AgentSettings
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.ports.chat import Preloadable

EXIT_INTERRUPTED = 130

HELP = """\
Commands:
  /help       show this help
  /model      how to use another model or provider
  /sessions   list the recent sessions of this project
  /clear      start a new conversation
  exit, quit  leave (Ctrl+C cancels a running request; twice leaves)"""

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


class InteractiveSession:
    """One interactive session: reads prompts, runs turns, handles slash commands and Ctrl+C."""

    def __init__(
        self,
        loop: AgentLoop,
        statistics: SessionStatistics,
        *,
        request: InteractiveRequest,
        binding: SessionBinding,
        project: Path,
    ) -> None:
        self._agent = loop
        self._binding = binding
        self._project = project
        self._statistics = statistics
        self._request = request
        from rich.console import Console

        self._console = Console(highlight=False, no_color=request.plain, emoji=False)

    def _renderer(self) -> Renderer:
        if self._request.plain or not sys.stdout.isatty():
            return TextRenderer(show_thinking=self._request.show_thinking, show_tokens=False, plain=True)
        from ironhive.cli.live_markdown import LiveMarkdownRenderer

        return LiveMarkdownRenderer(self._console, show_thinking=self._request.show_thinking)

    def run(self, event_loop: asyncio.AbstractEventLoop, banner: str) -> int:
        """Run the prompt loop until exit; returns the exit code."""
        self._console.print(banner, markup=False)
        interrupted = False
        while True:
            try:
                line = input("> ").strip()
            except EOFError:
                break
            except KeyboardInterrupt:
                if interrupted:
                    event_loop.run_until_complete(self._binding.close("user_exit"))
                    self._print_statistics()
                    return EXIT_INTERRUPTED
                interrupted = True
                self._console.print("\n(press Ctrl+C again or type exit to leave)", style="dim")
                continue
            interrupted = False
            if not line:
                continue
            if line.lower() in {"exit", "quit"}:
                break
            if line.startswith("/"):
                self._command(line, event_loop)
                continue
            interrupted = event_loop.run_until_complete(self._turn(line))
        event_loop.run_until_complete(self._binding.close("user_exit"))
        self._print_statistics()
        return 0

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

    async def _turn(self, prompt: str) -> bool:
        """Run one turn; returns True when Ctrl+C interrupted it."""
        renderer = self._renderer()
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, task.cancel)
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
            task.uncancel()
            renderer.fail("cancelled", EXIT_INTERRUPTED)
            self._console.print("Interrupting… press Ctrl+C again to exit.", style="dim")
            return True
        except IronHiveError as error:
            renderer.fail(str(error), 1)
        except Exception as error:  # the session goes on after any failure of one turn
            renderer.fail(f"{type(error).__name__}: {error}", 1)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        return False

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
                approval=ConsoleApprovalService(),
                initial_mode=Mode.PLANNING if request.planning else Mode.WORKING,
            )
            agent, release = hold_agent(event_loop, settings)
            binding = event_loop.run_until_complete(agent.open_session(request.session))
        except IronHiveError as error:
            sys.stderr.write(f"Error: {error}\n")
            return 1
        if isinstance(agent.client, Preloadable):
            from rich.console import Console

            with Console(stderr=True).status(f"Loading the local model {agent.provider.model}…"):
                event_loop.run_until_complete(agent.client.warm_up())
        choice = agent.provider
        statistics = SessionStatistics(model=choice.model, local=choice.name == "lmsupply")
        mode = " (planning mode: read-only tools)" if request.planning else ""
        restored = len(agent.loop.history)
        resumed = f"\nResumed session {binding.session_id} ({restored} messages)." if restored else ""
        banner = (
            f"ironhive {__version__} — {choice.name} / {choice.model}{mode} — session {binding.session_id}{resumed}\n"
            "Type a request, /help for commands, exit to leave."
        )
        session = InteractiveSession(agent.loop, statistics, request=request, binding=binding, project=project)
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
