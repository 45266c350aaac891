"""``ironhive run --server`` and ``run --http``: the agent behind the turn-stream protocol, approvals over the wire."""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from collections.abc import AsyncIterator, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ironhive.adapters.server.events import to_server_events
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.stdio_runner import AgentServerRunner
from ironhive.adapters.server.turns import ProcessMessage
from ironhive.agent_factory import AgentSettings, open_agent
from ironhive.configuration import load_configuration
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import IronHiveError
from ironhive.domain.permissions.modes import Mode
from ironhive.domain.sessions import SessionBinding, SessionRequest, session_id_problem
from ironhive.domain.turn import AgentChunk
from ironhive.domain.turn_options import turn_override
from ironhive.ports.chat import Preloadable
from ironhive.protocol.models import ServerEvent, SessionStartedEvent, UserMessageRequest

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig


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


HOST_TOKEN_VARIABLE = "IRONHIVE_HOST_TOKEN"
"""Environment variable holding the bearer token ``run --http`` sends to the agent host (none when unset or empty)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeRequest:
    """What every server surface is asked to serve (``run --server`` and ``run --http`` alike).

    Attributes:
        session_id: ``--session-id``: that session, resumed or created; a new id when None.
        provider: ``--provider``.
        model: ``-m``.
        environ: The process environment.
        approval_timeout_seconds: ``--approval-timeout``; ``approval.timeoutSeconds`` when None.
    """

    session_id: str | None
    provider: str | None
    model: str | None
    environ: Mapping[str, str]
    approval_timeout_seconds: float | None = None

    def usage_problem(self) -> str | None:
        """What is wrong with the options, or None (each is a usage error: exit 2)."""
        if (problem := approval_timeout_problem(self.approval_timeout_seconds)) is not None:
            return problem
        return None if self.session_id is None else session_id_problem(self.session_id)


def approval_timeout_problem(timeout: float | None) -> str | None:
    """What is wrong with an ``--approval-timeout`` (of every server command), or None."""
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        return f"--approval-timeout must be a positive number of seconds, got {timeout:g}"
    return None


@dataclass(frozen=True, slots=True)
class ServedAgent:
    """The agent of one server session, ready for a runner.

    Attributes:
        process: The processor of user messages (turns recorded in the session).
        hitl_bridge: The approval service of the agent; the runner attaches it so the client answers approvals.
        session_id: The session's id (the one asked for, or a new ``<ms hex>-<8 hex>`` id).
    """

    process: ProcessMessage
    hitl_bridge: HitlBridge
    session_id: str


def served_settings(
    config: IronHiveConfig,
    *,
    project: Path,
    provider: str | None,
    model: str | None,
    approval_timeout_seconds: float | None,
) -> tuple[AgentSettings, HitlBridge]:
    """How every server surface builds a session's agent: the CLI's tools and permissions, Idle mode, approvals over
    the wire through the returned bridge (``approval.timeoutSeconds`` unless a timeout is given).

    Raises:
        ConfigurationError: No provider fits, or a section is invalid.
    """
    bridge = HitlBridge(timeout_seconds=approval_timeout_seconds or float(config.approval.timeout_seconds))
    settings = AgentSettings.from_config(
        config, provider=provider, model=model, working_directory=project, approval=bridge, initial_mode=Mode.IDLE
    )
    return settings, bridge


@contextlib.asynccontextmanager
async def open_served_agent(request: ServeRequest) -> AsyncIterator[ServedAgent]:
    """The agent every server surface serves: the CLI's tools and permissions, Idle mode, approvals over the wire.

    The requested session is resumed (or, with its first turn, created; a new id when None) and a local model is
    loaded before this yields, so a runner announces itself only once the agent can answer. When the block ends the
    session is ended: ``completed`` after shutdown or end of input, ``error`` when the block fails.

    Raises:
        ConfigurationError: The configuration or a provider cannot be used.
    """
    project = Path.cwd()
    config = load_configuration(request.environ, project).config
    settings, bridge = served_settings(
        config,
        project=project,
        provider=request.provider,
        model=request.model,
        approval_timeout_seconds=request.approval_timeout_seconds,
    )
    # Untrusted project plugin files are not started here: nobody can be asked before the client attaches
    # (`ironhive mcp trust` trusts one ahead of time).
    async with open_agent(settings) as agent:
        binding = await agent.open_session(SessionRequest(session_id=request.session_id))
        if isinstance(agent.client, Preloadable):
            await agent.client.warm_up()  # a local model loads before any protocol line is written
        try:
            yield ServedAgent(
                process=agent_processor(agent.loop, binding), hitl_bridge=bridge, session_id=binding.session_id
            )
        except BaseException as error:
            stopped = isinstance(error, asyncio.CancelledError | KeyboardInterrupt)
            with contextlib.suppress(IronHiveError, OSError):
                await binding.close("user_exit" if stopped else "error")
            raise
        await binding.close("completed")


async def serve_stdio(request: ServeRequest) -> None:
    """Serve one session on stdin/stdout until shutdown or end of input (the session is persisted)."""
    async with open_served_agent(request) as served:
        runner = AgentServerRunner(served.process, hitl_bridge=served.hitl_bridge)
        await runner.write(SessionStartedEvent(session_id=served.session_id))
        await runner.run()


async def serve_http(host_url: str, request: ServeRequest) -> None:
    """Serve one session to the agent host at ``host_url`` until it sends shutdown (the session is persisted).

    ``ready`` (its body carries the session id) plays the part of stdio's ``session_started``. When
    ``IRONHIVE_HOST_TOKEN`` is set, every request to the host carries ``Authorization: Bearer <token>``.

    Raises:
        HostConnectionError: The host cannot be reached, refused the agent, or stayed unreachable.
    """
    import aiohttp

    from ironhive.adapters.server.http_runner import AgentHttpRunner

    token = request.environ.get(HOST_TOKEN_VARIABLE, "").strip()
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        open_served_agent(request) as served,
        aiohttp.ClientSession(headers=headers) as http,
    ):
        runner = AgentHttpRunner(
            host_url, served.session_id, served.process, hitl_bridge=served.hitl_bridge, session=http
        )
        await runner.run()


def host_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an agent host's base URL, or None when it can."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return f"--http needs a URL such as http://127.0.0.1:5100, got {url!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--http needs an http:// or https:// URL such as http://127.0.0.1:5100, got {url!r}"
    if parts.username is not None or parts.password is not None:
        return f"--http URLs must not carry credentials; set {HOST_TOKEN_VARIABLE} to send a bearer token"
    if parts.query or parts.fragment:
        return "--http takes the host's base URL, without a query or fragment"
    return None


def run_server(request: ServeRequest) -> int:
    """Run ``ironhive run --server``; returns the exit code (0 after shutdown or end of input, 2 for a bad id)."""
    if (problem := request.usage_problem()) is not None:
        sys.stderr.write(f"Error: {problem}\n")
        return 2
    return _exit_code(serve_stdio(request), request.environ)


def run_http(host_url: str, request: ServeRequest) -> int:
    """Run ``ironhive run --http URL``; returns the exit code (0 after shutdown, 1 when the host fails or refuses, 2
    for a malformed URL or session id)."""
    if (problem := host_url_problem(host_url) or request.usage_problem()) is not None:
        sys.stderr.write(f"Error: {problem}\n")
        return 2
    return _exit_code(serve_http(host_url, request), request.environ)


def _exit_code(serve: Coroutine[Any, Any, None], environ: Mapping[str, str]) -> int:
    """Run a server until it ends: 0, or 1 with an ``Error:`` line for a project error, 130 on Ctrl+C."""
    from ironhive.log_setup import configure_logging

    configure_logging(environ)
    try:
        asyncio.run(serve)
    except IronHiveError as error:
        sys.stderr.write(f"Error: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
