"""``ironhive run --server``: the agent behind the stdio turn-stream protocol, with approvals over the wire."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from ironhive.adapters.protocol.models import ServerEvent, SessionStartedEvent, UserMessageRequest
from ironhive.adapters.server.events import to_server_events
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.stdio_runner import AgentServerRunner
from ironhive.adapters.server.turns import ProcessMessage
from ironhive.agent_factory import AgentSettings, load_configuration, open_agent
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import IronHiveError
from ironhive.domain.permissions.modes import Mode
from ironhive.domain.turn import AgentChunk
from ironhive.domain.turn_options import turn_override
from ironhive.ports.chat import Preloadable
from ironhive.sessions import SessionBinding, SessionRequest


def agent_processor(loop: AgentLoop, binding: SessionBinding | None = None) -> ProcessMessage:
    """The processor of ``run --server``: validates the turn's options, runs the turn, maps its chunks to events.

    Each finished turn is recorded in the session when there is one. ``user_message.model`` is not honoured here
    (only custom processors see it).
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
        chunks: AsyncIterator[AgentChunk] = loop.run_streaming(message.content, options)
        if binding is not None:
            chunks = binding.recording(message.content, chunks)
        async for event in to_server_events(chunks):
            yield event

    return process


async def serve_stdio(
    *,
    session_id: str,
    provider: str | None,
    model: str | None,
    environ: Mapping[str, str],
    approval_timeout_seconds: float | None = None,
) -> None:
    """Serve one session on stdin/stdout until shutdown or end of input (the session is persisted)."""
    project = Path.cwd()
    config = load_configuration(environ, project).config
    bridge = HitlBridge(timeout_seconds=approval_timeout_seconds or float(config.approval.timeout_seconds))
    settings = AgentSettings.from_config(
        config, provider=provider, model=model, working_directory=project, approval=bridge, initial_mode=Mode.IDLE
    )
    # Untrusted project plugin files are not started here: nobody can be asked before the client attaches
    # (`ironhive mcp trust` trusts one ahead of time).
    async with open_agent(settings) as agent:
        binding = await SessionBinding.open(
            agent.loop, SessionRequest(session_id=session_id), model=agent.provider.model, project=project
        )
        if isinstance(agent.client, Preloadable):
            await agent.client.warm_up()  # a local model loads before any protocol line is written
        runner = AgentServerRunner(agent_processor(agent.loop, binding), hitl_bridge=bridge)
        await runner.write(SessionStartedEvent(session_id=session_id))
        await runner.run()


def run_server(
    *,
    session_id: str | None,
    provider: str | None,
    model: str | None,
    environ: Mapping[str, str],
    approval_timeout_seconds: float | None = None,
) -> int:
    """Run ``ironhive run --server``; returns the exit code (0 after shutdown or end of input)."""
    from ironhive.log_setup import configure_logging

    configure_logging(environ)
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
    except IronHiveError as error:
        sys.stderr.write(f"Error: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
