"""Runs one prompt (``ironhive -p``): builds the agent, streams the turn, maps failures to exit codes."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.cli.render import (
    CANCELLED,
    JsonlRenderer,
    JsonRenderer,
    Renderer,
    RunJsonRenderer,
    TextRenderer,
    replay,
)
from ironhive.domain.errors import ConfigurationError, IronHiveError
from ironhive.domain.turn import TurnCompleted

if TYPE_CHECKING:
    from ironhive.domain.permissions.modes import Mode

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


def make_renderer(request: OneShotRequest) -> Renderer:
    """The renderer of the requested output format."""
    if request.output == "json":
        return JsonRenderer(show_thinking=request.show_thinking)
    if request.output == "jsonl":
        return JsonlRenderer(show_thinking=request.show_thinking)
    if request.output == "run-json":
        return RunJsonRenderer()
    return TextRenderer(show_thinking=request.show_thinking, show_tokens=request.show_tokens, plain=request.plain)


def run_one_shot(request: OneShotRequest, *, environ: Mapping[str, str]) -> int:
    """Run the prompt and return the process exit code (0, 1, or 130 when cancelled with Ctrl+C)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    renderer = make_renderer(request)
    return asyncio.run(_drive(request, renderer, environ))


async def _drive(request: OneShotRequest, renderer: Renderer, environ: Mapping[str, str]) -> int:
    from ironhive.adapters.console_approval import ConsoleApprovalService
    from ironhive.agent_factory import AgentSettings, build_agent
    from ironhive.providers import select_provider

    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, task.cancel)
    renderer.start(None)
    try:
        choice = select_provider(request.provider, request.model, environ)
        agent = (
            await build_agent(
                AgentSettings(
                    provider=choice,
                    working_directory=Path.cwd(),
                    approval=ConsoleApprovalService(),
                    initial_mode=_initial_mode(request),
                )
            )
        ).loop
        if request.dry_run:
            sys.stderr.write("Dry run: planning mode, read-only tools only; nothing will be changed.\n")
        if request.stream:
            async with aclosing(agent.run_streaming(request.prompt)) as chunks:
                async for chunk in chunks:
                    if isinstance(chunk, TurnCompleted):
                        turn = chunk.turn
                    else:
                        renderer.chunk(chunk)
        else:
            turn = await agent.run(request.prompt)
            for chunk in replay(turn):
                renderer.chunk(chunk)
    except asyncio.CancelledError:
        renderer.fail(CANCELLED, EXIT_CANCELLED)
        return EXIT_CANCELLED
    except ConfigurationError as error:
        _fail(renderer, request, f"Configuration Error: {error}", str(error))
        return EXIT_ERROR
    except IronHiveError as error:
        _fail(renderer, request, str(error), str(error))
        return EXIT_ERROR
    except Exception as error:  # the last line of defence: a clear message, never a traceback on stdout
        log.debug("unhandled error", exc_info=True)
        message = f"{type(error).__name__}: {error}"
        _fail(renderer, request, message, message)
        return EXIT_ERROR
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
    renderer.finish(turn, None)
    return EXIT_OK


def _initial_mode(request: OneShotRequest) -> Mode:
    from ironhive.domain.permissions.modes import Mode

    if request.idle_mode:
        return Mode.IDLE
    return Mode.PLANNING if request.planning else Mode.WORKING


def _fail(renderer: Renderer, request: OneShotRequest, text_message: str, machine_message: str) -> None:
    renderer.fail(text_message if request.output == "text" else machine_message, EXIT_ERROR)
