"""``ironhive run --server``: the agent behind the stdio turn-stream protocol, with approvals over the wire."""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from ironhive.adapters.protocol.models import ServerEvent, SessionStartedEvent, UserMessageRequest
from ironhive.adapters.server.events import to_server_events
from ironhive.adapters.server.hitl_bridge import DEFAULT_TIMEOUT_SECONDS, HitlBridge
from ironhive.adapters.server.stdio_runner import AgentServerRunner
from ironhive.adapters.server.turns import ProcessMessage
from ironhive.agent_factory import AgentSettings, build_agent
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.permissions.modes import Mode
from ironhive.domain.turn_options import turn_override
from ironhive.ports.chat import Preloadable
from ironhive.providers import select_provider


def agent_processor(loop: AgentLoop) -> ProcessMessage:
    """The processor of ``run --server``: validates the turn's options, runs the turn, maps its chunks to events.

    ``user_message.model`` is not honoured here (only custom processors see it).
    """
    registered = tuple(tool.spec for tool in loop.tools)

    async def process(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        options = None
        if message.options is not None:
            wire = message.options
            options = turn_override(
                registered,
                tool_names=wire.tool_names,
                tool_mode=wire.tool_mode,
                reasoning_effort=wire.reasoning_effort,
                temperature=wire.temperature,
                max_output_tokens=wire.max_output_tokens,
            )
        async for event in to_server_events(loop.run_streaming(message.content, options)):
            yield event

    return process


async def serve_stdio(
    *,
    session_id: str,
    provider: str | None,
    model: str | None,
    environ: Mapping[str, str],
    approval_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> None:
    """Serve one session on stdin/stdout until shutdown or end of input."""
    choice = select_provider(provider, model, environ)
    bridge = HitlBridge(timeout_seconds=approval_timeout_seconds)
    agent = await build_agent(
        AgentSettings(provider=choice, working_directory=Path.cwd(), approval=bridge, initial_mode=Mode.IDLE)
    )
    if isinstance(agent.client, Preloadable):
        await agent.client.warm_up()  # a local model loads before any protocol line is written
    runner = AgentServerRunner(agent_processor(agent.loop), hitl_bridge=bridge)
    await runner.write(SessionStartedEvent(session_id=session_id))
    await runner.run()


def run_server(
    *,
    session_id: str | None,
    provider: str | None,
    model: str | None,
    environ: Mapping[str, str],
    approval_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> int:
    """Run ``ironhive run --server``; returns the exit code (0 after shutdown or end of input)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(
            serve_stdio(
                session_id=session_id or uuid.uuid4().hex,
                provider=provider,
                model=model,
                environ=environ,
                approval_timeout_seconds=approval_timeout_seconds,
            )
        )
    except ConfigurationError as error:
        sys.stderr.write(f"Configuration Error: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
