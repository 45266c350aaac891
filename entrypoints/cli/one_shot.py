"""Runs one prompt (``ironhive -p``): builds the agent, streams the turn, maps failures to exit codes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.cli.render import (
    CANCELLED,
    ClosedPipeTolerant,
    JsonlRenderer,
    JsonRenderer,
    Renderer,
    RunJsonRenderer,
    TextRenderer,
    replay,
)
from ironhive.domain.errors import IronHiveError
from ironhive.domain.sessions import SessionRequest
from ironhive.domain.turn import TurnCompleted, TurnRecord

if TYPE_CHECKING:
    from ironhive.domain.permissions.modes import Mode
    from ironhive.domain.sessions import SessionBinding

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CANCELLED = 130

log = logging.getLogger("ironhive")


@dataclass(frozen=True, kw_only=True, slots=True)
class OneShotRequest:
    """What ``ironhive -p`` was asked to do."""

    prompt: str
    model: str | None
    provider: str | None
    output: str
    plain: bool
    stream: bool
    show_tokens: bool
    show_thinking: bool
    planning: bool
    dry_run: bool
    idle_mode: bool = False
    auto_commit: bool = False
    commit_message: str | None = None
    session: SessionRequest = field(default_factory=SessionRequest)


def make_renderer(request: OneShotRequest) -> Renderer:
    """The renderer of the requested output format."""
    if request.output == "json":
        return JsonRenderer(show_thinking=request.show_thinking)
    if request.output == "jsonl":
        return JsonlRenderer(show_thinking=request.show_thinking)
    if request.output == "run-json":
        return RunJsonRenderer()
    if request.output == "run-text":  # ``ironhive run``: the answer only
        return TextRenderer(
            show_thinking=request.show_thinking, show_tokens=request.show_tokens, plain=True, show_tools=False
        )
    return TextRenderer(show_thinking=request.show_thinking, show_tokens=request.show_tokens, plain=request.plain)


def run_one_shot(request: OneShotRequest, *, environ: Mapping[str, str]) -> int:
    """Run the prompt and return the process exit code (0, 1, or 130 when cancelled with Ctrl+C)."""
    from ironhive.log_setup import configure_logging

    configure_logging(environ)
    renderer = ClosedPipeTolerant(make_renderer(request))
    return asyncio.run(_drive(request, renderer, environ))


async def _drive(request: OneShotRequest, renderer: Renderer, environ: Mapping[str, str]) -> int:
    from ironhive.cli.early_local import start_local_model_early
    from ironhive.configuration import load_configuration

    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, task.cancel)
    started = False
    binding: SessionBinding | None = None
    stack = contextlib.AsyncExitStack()
    project = Path.cwd()
    was_repository = (project / ".git").exists()  # auto-commit only in a directory that was a repository at start
    try:
        config = load_configuration(environ, project, ask=True).config
        # Before the heavy imports below: a local model then loads in its worker while this process imports and wires.
        start_local_model_early(config, request.provider, request.model, environ)
        from ironhive.adapters.mcp.console_trust import ConsoleTrustDecider
        from ironhive.agent_factory import open_agent
        from ironhive.cli.console_settings import console_settings
        from ironhive.process_lifecycle import resume_collection

        settings = console_settings(
            config, provider=request.provider, model=request.model, project=project, initial_mode=_initial_mode(request)
        )
        agent = await stack.enter_async_context(open_agent(settings, trust=ConsoleTrustDecider()))
        resume_collection()  # wired: what exists now lives until the end, the turn's garbage is collected as usual
        binding = await agent.open_session(request.session)
        renderer.start(binding.session_id)
        started = True
        if request.dry_run:
            sys.stderr.write("Dry run: planning mode, read-only tools only; nothing will be changed.\n")
        if request.stream:
            async with aclosing(agent.loop.run_streaming(request.prompt)) as chunks:
                async for chunk in chunks:
                    if isinstance(chunk, TurnCompleted):
                        turn = chunk.turn
                    else:
                        renderer.chunk(chunk)
        else:
            turn = await agent.loop.run(request.prompt)
            for chunk in replay(turn):
                renderer.chunk(chunk)
        await binding.record(request.prompt, turn)
    except asyncio.CancelledError:
        return await _end(renderer, binding, started, CANCELLED, EXIT_CANCELLED)
    except IronHiveError as error:  # a ConfigurationError too: the renderer's "Error: " is its one prefix
        return await _end(renderer, binding, started, str(error), EXIT_ERROR)
    except Exception as error:  # the last line of defence: a clear message, never a traceback on stdout
        log.debug("unhandled error", exc_info=True)
        message = f"{type(error).__name__}: {error}"
        return await _end(renderer, binding, started, message, EXIT_ERROR)
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        await stack.aclose()
    await binding.close("completed")
    renderer.finish(turn, binding.session_id)
    if request.auto_commit:
        _auto_commit(request, turn, project, was_repository)
    return EXIT_OK


def _auto_commit(request: OneShotRequest, turn: TurnRecord, project: Path, was_repository: bool) -> None:
    """Commit what the run's tools changed; git's outcome is reported on stderr and never changes the exit code."""
    from ironhive.cli.auto_commit import auto_commit, changed_paths, default_message

    if not was_repository:
        lines = ["Auto-commit skipped: Not a Git repository"]
    else:
        message = request.commit_message or default_message(request.prompt)
        lines = auto_commit(project, changed_paths(turn.tool_calls, project), message)
    sys.stderr.write("".join(f"{line}\n" for line in lines))


async def _end(
    renderer: Renderer,
    binding: SessionBinding | None,
    started: bool,
    message: str,
    code: int,
) -> int:
    """Report a failed or cancelled run (``start`` first when nothing was written yet) and end its session."""
    if not started:
        renderer.start(None)
    renderer.fail(message, code)
    if binding is not None:
        with contextlib.suppress(IronHiveError, OSError):
            await binding.close("user_exit" if code == EXIT_CANCELLED else "error")
    return code


def _initial_mode(request: OneShotRequest) -> Mode:
    from ironhive.domain.permissions.modes import Mode

    if request.idle_mode:
        return Mode.IDLE
    return Mode.PLANNING if request.planning else Mode.WORKING
