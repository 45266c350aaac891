"""One ACP session: ironhive's agent for one editor session (same graph as the CLI), its turns, modes and history."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from acp.schema import PermissionOption, RequestPermissionResponse, SessionMode, SessionModeState, ToolCallUpdate

from ironhive.acp.approval import AcpApprovalService
from ironhive.acp.editor_files import editor_reads
from ironhive.acp.updates import (
    TODO_TOOL,
    StopReason,
    Update,
    call_finished,
    chunk_updates,
    history_updates,
    plan_update,
    stop_reason,
)
from ironhive.agent_factory import Agent, AgentSettings, open_agent
from ironhive.configuration import load_configuration
from ironhive.domain.errors import IronHiveError
from ironhive.domain.permissions.modes import Mode, ModeTrigger
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.domain.turn import ToolResultChunk, TurnCompleted, TurnRecord
from ironhive.ports.tools import Tool

SendUpdate = Callable[[Update], Awaitable[None]]
AskSession = Callable[[str, ToolCallUpdate, list[PermissionOption]], Awaitable[RequestPermissionResponse]]
ReadSession = Callable[[str, str, int | None, int | None], Awaitable[str]]
"""Reads a file from the editor for a session: session id, absolute path, 1-based line, line limit."""

DEFAULT_MODE = "default"
PLAN_MODE = "plan"
MODES = (
    SessionMode(
        id=DEFAULT_MODE, name="Default", description="Every tool; the permission rules ask before risky calls."
    ),
    SessionMode(id=PLAN_MODE, name="Plan", description="Planning mode: read-only tools only, nothing is changed."),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionOptions:
    """What every session of one ``ironhive acp`` process is built from.

    Attributes:
        provider: ``--provider``.
        model: ``-m``.
        environ: The process environment.
    """

    provider: str | None
    model: str | None
    environ: Mapping[str, str]


class AcpSession:
    """An editor session bound to an ironhive session: one turn at a time, cancellable, recorded in the store."""

    def __init__(
        self, *, agent: Agent, binding: SessionBinding, cwd: Path, stack: contextlib.AsyncExitStack, rounds: int
    ) -> None:
        self._agent = agent
        self._binding = binding
        self._cwd = cwd
        self._stack = stack
        self._rounds = rounds
        self._turn: asyncio.Task[StopReason] | None = None

    @classmethod
    async def open(
        cls,
        options: SessionOptions,
        cwd: Path,
        ask: AskSession,
        *,
        resume: str | None = None,
        extra_tools: Callable[[contextlib.AsyncExitStack], Awaitable[Sequence[Tool]]] | None = None,
        read_editor: ReadSession | None = None,
    ) -> AcpSession:
        """Build the agent for ``cwd`` (its configuration, rules, plugins and session store) and bind its session.

        Args:
            options: The process's provider, model and environment.
            cwd: The editor's working directory for this session.
            ask: Sends a permission request about this session to the editor.
            resume: The stored session to load (None: a new session).
            extra_tools: Starts the editor's MCP servers on the stack and returns their tools.
            read_editor: Reads files from the editor (when it offers ``fs.readTextFile``): ``read_file`` sees its
                unsaved buffers.

        Raises:
            ConfigurationError: The configuration or a provider cannot be used.
            SessionNotFoundError: ``resume`` names no session of this project.
        """
        project = await asyncio.to_thread(cwd.resolve)
        bound: list[str] = []  # the session's id, known once it is opened (no call is asked about before)

        async def ask_editor(call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
            return await ask(bound[0], call, options)

        config = load_configuration(options.environ, project).config
        settings = AgentSettings.from_config(
            config,
            provider=options.provider,
            model=options.model,
            working_directory=project,
            approval=AcpApprovalService(ask_editor, project),
            initial_mode=Mode.WORKING,
        )
        if read_editor is not None:

            async def read(path: str, line: int | None, limit: int | None) -> str:
                return await read_editor(bound[0], path, line, limit)

            settings = dataclasses.replace(settings, adapt_builtin_tools=editor_reads(read, project))
        stack = contextlib.AsyncExitStack()
        try:
            tools = await extra_tools(stack) if extra_tools is not None else ()
            agent = await stack.enter_async_context(open_agent(settings, extra_tools=tools))
            binding = await agent.open_session(SessionRequest(resume=resume))
        except BaseException:
            await stack.aclose()
            raise
        bound.append(binding.session_id)
        rounds = settings.behavior.maximum_iterations_per_request
        return cls(agent=agent, binding=binding, cwd=project, stack=stack, rounds=rounds)

    @property
    def session_id(self) -> str:
        """The ironhive session id (what ``session/load`` takes back)."""
        return self._binding.session_id

    @property
    def mode_id(self) -> str:
        """The ACP mode the session is in."""
        return PLAN_MODE if self._agent.modes.mode is Mode.PLANNING else DEFAULT_MODE

    def modes(self) -> SessionModeState:
        """The session's modes for ``session/new`` and ``session/load``."""
        return SessionModeState(current_mode_id=self.mode_id, available_modes=list(MODES))

    def set_mode(self, mode_id: str) -> bool:
        """Switch to ``plan`` (planning mode) or ``default``; False for a mode this agent does not have."""
        machine = self._agent.modes
        if mode_id == PLAN_MODE:
            if machine.mode is not Mode.PLANNING:
                if machine.mode is not Mode.WORKING:
                    machine.fire(ModeTrigger.RESET)
                    machine.fire(ModeTrigger.START_PLANNING)
                else:
                    machine.fire(ModeTrigger.REPLAN_REQUESTED)
            return True
        if mode_id == DEFAULT_MODE:
            if machine.mode is Mode.PLANNING:
                machine.fire(ModeTrigger.FINISH_PLANNING)
            elif machine.mode is not Mode.WORKING:
                machine.fire(ModeTrigger.RESET)
                machine.fire(ModeTrigger.START_WORKING)
            return True
        return False

    async def replay(self, send: SendUpdate) -> None:
        """Send the stored conversation as updates (``session/load``)."""
        for update in history_updates(self._agent.loop.history, self._cwd):
            await send(update)

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self._turn is not None and not self._turn.done()

    async def prompt(self, text: str, send: SendUpdate) -> StopReason:
        """Run one turn, streaming its updates; ``cancelled`` when :meth:`cancel` stopped it.

        Raises:
            IronHiveError: The turn failed (provider, tools).
        """
        turn = asyncio.create_task(self._run(text, send))
        self._turn = turn
        try:
            return await turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if turn.cancelled() and (current is None or current.cancelling() == 0):
                return "cancelled"
            turn.cancel()
            raise

    def cancel(self) -> None:
        """Cancel the running turn (its tool's process is killed, a pending permission request is dropped)."""
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    async def _run(self, text: str, send: SendUpdate) -> StopReason:
        finished: TurnRecord | None = None
        ended: set[str] = set()
        async for chunk in self._binding.recording(text, self._agent.loop.run_streaming(text)):
            for update in chunk_updates(chunk, self._cwd):
                await send(update)
            if isinstance(chunk, ToolResultChunk):
                ended.add(chunk.record.call_id)
                if chunk.record.name == TODO_TOOL and chunk.record.success:
                    plan = plan_update(self._cwd / ".ironhive" / "todo.json")
                    if plan is not None:
                        await send(plan)
            elif isinstance(chunk, TurnCompleted):
                finished = chunk.turn
                for record in finished.tool_calls:
                    if record.success is not None and record.call_id not in ended:
                        await send(call_finished(record))
        return "end_turn" if finished is None else stop_reason(finished, self._rounds)

    async def close(self) -> None:
        """Stop a running turn, end the session in the store and stop its plugin servers."""
        turn = self._turn
        if turn is not None and not turn.done():
            turn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await turn
        with contextlib.suppress(IronHiveError, OSError):
            await self._binding.close("completed")
        await self._stack.aclose()
