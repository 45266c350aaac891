"""One ACP session: ironhive's agent for one editor session (same graph as the CLI), its turns, modes and history."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from acp.helpers import update_tool_call
from acp.schema import (
    PermissionOption,
    RequestPermissionResponse,
    SessionConfigOptionSelect,
    SessionMode,
    SessionModeState,
    ToolCallUpdate,
)

from ironhive.acp.approval import AcpApprovalService
from ironhive.acp.config_options import (
    ModelValue,
    find_value,
    listed_models,
    merged,
    mode_option,
    model_option,
    offline_models,
)
from ironhive.acp.editor_files import editor_reads
from ironhive.acp.editor_writes import WRITING_TOOLS, FileChange, FileChanges, editor_writes
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
from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.agent_factory import Agent, AgentSettings, open_agent
from ironhive.configuration import load_configuration
from ironhive.domain.errors import IronHiveError
from ironhive.domain.permissions.modes import Mode, ModeTrigger
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.domain.turn import ToolCallRecord, ToolResultChunk, TurnCompleted, TurnRecord
from ironhive.ports.tools import Tool
from ironhive.providers import provider_chain, provider_choice

SendUpdate = Callable[[Update], Awaitable[None]]
AskSession = Callable[[str, ToolCallUpdate, list[PermissionOption]], Awaitable[RequestPermissionResponse]]
ReadSession = Callable[[str, str, int | None, int | None], Awaitable[str]]
"""Reads a file from the editor for a session: session id, absolute path, 1-based line, line limit."""
WriteSession = Callable[[str, str, str], Awaitable[None]]
"""Writes a file through the editor for a session: session id, absolute path, content."""

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


class SessionBusyError(IronHiveError):
    """A prompt came while the session's turn was running."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Setup:
    """What a session keeps to rebuild its agent on another model: settings, configuration, the editor's tools."""

    settings: AgentSettings
    config: IronHiveConfig
    tools: tuple[Tool, ...]
    changes: FileChanges


@dataclass(frozen=True, kw_only=True, slots=True)
class _Built:
    """An agent, its session binding and the stack its plugin servers run on."""

    agent: Agent
    binding: SessionBinding
    stack: contextlib.AsyncExitStack


async def _build(settings: AgentSettings, tools: Sequence[Tool], request: SessionRequest) -> _Built:
    stack = contextlib.AsyncExitStack()
    try:
        agent = await stack.enter_async_context(open_agent(settings, extra_tools=tools))
        binding = await agent.open_session(request)
    except BaseException:
        await stack.aclose()
        raise
    return _Built(agent=agent, binding=binding, stack=stack)


class AcpSession:
    """An editor session bound to an ironhive session: one turn at a time, cancellable, recorded in the store."""

    def __init__(self, *, built: _Built, cwd: Path, servers: contextlib.AsyncExitStack, setup: _Setup) -> None:
        self._agent = built.agent
        self._binding = built.binding
        self._agent_stack = built.stack
        self._cwd = cwd
        self._servers = servers
        self._setup = setup
        self._settings = setup.settings
        self._models = offline_models(((c.name, c.model) for c in setup.settings.providers), setup.config)
        self._pending: AgentSettings | None = None
        self._switching = asyncio.Lock()
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
        write_editor: WriteSession | None = None,
        notify: Callable[[str, Update], Awaitable[None]] | None = None,
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
            write_editor: Writes files through the editor (when it offers ``fs.writeTextFile``): what ``write_file``
                and ``edit_file`` wrote on disk reaches its open buffers.
            notify: Sends an update about this session outside a prompt's stream (a call the editor allowed is
                ``in_progress``).

        Raises:
            ConfigurationError: The configuration or a provider cannot be used.
            SessionNotFoundError: ``resume`` names no session of this project.
        """
        project = await asyncio.to_thread(cwd.resolve)
        bound: list[str] = []  # the session's id, known once it is opened (no call is asked about before)

        async def ask_editor(call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
            return await ask(bound[0], call, options)

        async def started(call_id: str) -> None:
            if notify is not None:
                await notify(bound[0], update_tool_call(call_id, status="in_progress"))

        config = load_configuration(options.environ, project).config
        settings = AgentSettings.from_config(
            config,
            provider=options.provider,
            model=options.model,
            working_directory=project,
            approval=AcpApprovalService(ask_editor, project, started),
            initial_mode=Mode.WORKING,
        )
        reads: Callable[[Sequence[Tool]], Sequence[Tool]] | None = None
        if read_editor is not None:

            async def read(path: str, line: int | None, limit: int | None) -> str:
                return await read_editor(bound[0], path, line, limit)

            reads = editor_reads(read, project)
        write: Callable[[str, str], Awaitable[None]] | None = None
        if write_editor is not None:

            async def write_through(path: str, content: str) -> None:
                await write_editor(bound[0], path, content)

            write = write_through
        changes = FileChanges()
        writes = editor_writes(changes, write)

        def adapt(tools: Sequence[Tool]) -> Sequence[Tool]:
            return writes(reads(tools) if reads is not None else tools)

        settings = dataclasses.replace(settings, adapt_builtin_tools=adapt)
        servers = contextlib.AsyncExitStack()
        try:
            tools = await extra_tools(servers) if extra_tools is not None else ()
            built = await _build(settings, tools, SessionRequest(resume=resume))
        except BaseException:
            await servers.aclose()
            raise
        bound.append(built.binding.session_id)
        setup = _Setup(settings=settings, config=config, tools=tuple(tools), changes=changes)
        return cls(built=built, cwd=project, servers=servers, setup=setup)

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

    @property
    def model(self) -> ModelValue:
        """The model of the next turn (a switch asked for during a turn included)."""
        first = (self._pending or self._settings).providers[0]
        return ModelValue(first.name, first.model)

    def config_options(self) -> list[SessionConfigOptionSelect]:
        """The session's config options: its mode and its model."""
        return [mode_option(MODES, self.mode_id), model_option(self._models, self.model)]

    async def refresh_models(self) -> bool:
        """Add what the configured providers list to the offered models; whether anything was added."""
        found = merged(self._models, await listed_models(self._setup.config, home=Path.home()))
        added = len(found) > len(self._models)
        self._models = found
        return added

    async def set_model(self, value: str) -> None:
        """Use the offered model ``value`` (``provider/model``) from the next turn on (its failover chain after it).

        During a turn the switch waits for the turn's end. The conversation, the mode and the calls approved "always"
        carry over.

        Raises:
            ValueError: ``value`` is not an offered model.
            ConfigurationError: The model cannot be used (the session keeps its model).
        """
        chosen = find_value(self._models, value)
        if chosen is None:
            raise ValueError(f"{value!r} is not one of this session's models")
        config = self._setup.config
        chain = provider_chain(provider_choice(chosen.provider, config, chosen.model), config)
        settings = dataclasses.replace(self._settings, providers=tuple(chain))
        async with self._switching:
            if self.busy:
                self._pending = settings
            else:
                await self._switch(settings)

    async def _switch(self, settings: AgentSettings) -> None:
        """Rebuild the agent on ``settings`` (the caller holds ``_switching``); on failure the old agent stays."""
        self._pending = None
        built = await _build(settings, self._setup.tools, SessionRequest(session_id=self.session_id))
        built.agent.loop.reset(self._agent.loop.history)
        old_gate, new_gate = self._agent.container.slots.approval_gate(), built.agent.container.slots.approval_gate()
        if old_gate is not None and new_gate is not None:
            for scope in old_gate.remembered.scopes:
                new_gate.remembered.remember(scope)
        mode = self.mode_id
        old_stack = self._agent_stack
        self._agent, self._binding, self._agent_stack, self._settings = (
            built.agent,
            built.binding,
            built.stack,
            settings,
        )
        self.set_mode(mode)
        await old_stack.aclose()

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
        async with self._switching:  # a model switch under way finishes first; none starts until the turn is on
            if self.busy:
                raise SessionBusyError("a prompt is already running in this session")
            if self._pending is not None:
                await self._switch(self._pending)
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
        self._setup.changes.clear()
        async for chunk in self._binding.recording(text, self._agent.loop.run_streaming(text)):
            if isinstance(chunk, ToolResultChunk) and chunk.record.success is not None:
                await send(call_finished(chunk.record, self._change_of(chunk.record)))
            else:
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
        rounds = self._settings.behavior.maximum_iterations_per_request
        return "end_turn" if finished is None else stop_reason(finished, rounds)

    def _change_of(self, record: ToolCallRecord) -> FileChange | None:
        """The file change a successful ``write_file``/``edit_file`` call made (None for other calls)."""
        if not record.success or record.name not in WRITING_TOOLS:
            return None
        try:
            arguments = json.loads(record.arguments_text)
        except ValueError:
            return None
        path = arguments.get("path") if isinstance(arguments, dict) else None
        return self._setup.changes.take(record.name, path) if isinstance(path, str) else None

    async def close(self) -> None:
        """Stop a running turn, end the session in the store and stop its plugin servers."""
        turn = self._turn
        if turn is not None and not turn.done():
            turn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await turn
        with contextlib.suppress(IronHiveError, OSError):
            await self._binding.close("completed")
        try:
            await self._agent_stack.aclose()
        finally:
            await self._servers.aclose()
