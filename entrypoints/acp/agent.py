"""The ACP agent: initialize, sessions (new, load, modes), prompts and cancel, served through the official SDK."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    ConfigOptionUpdate,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    RequestPermissionResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)

from ironhive import __version__
from ironhive.acp.config_options import MODE_OPTION, MODEL_OPTION
from ironhive.acp.session import AcpSession, SessionBusyError, SessionOptions
from ironhive.acp.updates import Update, prompt_text
from ironhive.domain.errors import IronHiveError, SessionNotFoundError
from ironhive.domain.sessions import session_id_problem
from ironhive.ports.tools import Tool

log = logging.getLogger(__name__)


class IronHiveAcpAgent:
    """ironhive as an ACP agent: every editor session is one ironhive session built like the CLI's agent.

    Args:
        options: The provider, model and environment every session is built with.
    """

    def __init__(self, options: SessionOptions) -> None:
        self._options = options
        self._client: Client | None = None
        self._editor_reads = False
        self._editor_writes = False
        self._sessions: dict[str, AcpSession] = {}
        self._listings: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Client) -> None:
        """Keep the connection to the editor (updates and permission requests go through it)."""
        self._client = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: ClientCapabilities | None = None, **kwargs: Any
    ) -> InitializeResponse:
        """What this agent can do: text and embedded text context in prompts, loading stored sessions, MCP servers.

        When the editor can read files (``fs.readTextFile``), ``read_file`` takes its buffers; when it can write them
        (``fs.writeTextFile``), what ``write_file``/``edit_file`` wrote on disk is also written through it. Its terminal
        is never used: a command run there would escape ironhive's sandbox and command rules.
        """
        files = client_capabilities.fs if client_capabilities is not None else None
        self._editor_reads = bool(files is not None and files.read_text_file)
        self._editor_writes = bool(files is not None and files.write_text_file)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
            ),
            agent_info=Implementation(name="ironhive", title="ironhive", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """No authentication: providers' keys come from ironhive's configuration."""
        raise RequestError.invalid_params({"message": f"ironhive offers no authentication method ({method_id!r})"})

    async def new_session(
        self, cwd: str, mcp_servers: Sequence[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        """Open a new ironhive session in ``cwd`` (its id is what ``session/load`` takes back)."""
        session = await self._open(cwd, mcp_servers or (), resume=None)
        return NewSessionResponse(
            session_id=session.session_id, modes=session.modes(), config_options=list(session.config_options())
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Sequence[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """Resume a stored ironhive session of ``cwd``'s project and replay its conversation as updates."""
        if (problem := session_id_problem(session_id, name="Session id")) is not None:
            raise RequestError.invalid_params({"message": problem})
        old = self._sessions.pop(session_id, None)
        if old is not None:
            await old.close()
        session = await self._open(cwd, mcp_servers or (), resume=session_id)
        await session.replay(lambda update: self._send(session.session_id, update))
        return LoadSessionResponse(modes=session.modes(), config_options=list(session.config_options()))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """Switch between ``default`` and ``plan`` (ironhive's planning mode: read-only tools)."""
        session = self._session(session_id)
        if not session.set_mode(mode_id):
            raise RequestError.invalid_params({"message": f"unknown mode {mode_id!r}; use 'default' or 'plan'"})
        await self._options_changed(session)  # the mode config option follows
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Set the session's ``mode`` or ``model`` (an offered ``provider/model``: the model of the next turns)."""
        session = self._session(session_id)
        if isinstance(value, bool) or config_id not in (MODE_OPTION, MODEL_OPTION):
            raise RequestError.invalid_params({"message": f"no option {config_id!r} takes {value!r}; use mode, model"})
        if config_id == MODE_OPTION:
            if not session.set_mode(value):
                raise RequestError.invalid_params({"message": f"unknown mode {value!r}; use 'default' or 'plan'"})
        else:
            try:
                await session.set_model(value)
            except ValueError as error:
                raise RequestError.invalid_params({"message": str(error)}) from error
            except IronHiveError as error:
                raise RequestError(-32603, str(error)) from error
        return SetSessionConfigOptionResponse(config_options=list(session.config_options()))

    async def prompt(self, session_id: str, prompt: Sequence[Any], **kwargs: Any) -> PromptResponse:
        """Run one turn; its text, thoughts, tool calls and plan stream as ``session/update`` notifications."""
        session = self._session(session_id)
        if session.busy:
            raise RequestError.invalid_request({"message": "a prompt is already running in this session"})
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt has no text"})
        try:
            reason = await session.prompt(text, lambda update: self._send(session_id, update))
        except SessionBusyError as error:
            raise RequestError.invalid_request({"message": str(error)}) from error
        except IronHiveError as error:
            raise RequestError(-32603, str(error)) from error
        return PromptResponse(stop_reason=reason)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Cancel the session's running turn (a notification: an unknown session is ignored)."""
        session = self._sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No extension methods."""
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""

    async def close(self) -> None:
        """End every session (the editor disconnected)."""
        for listing in list(self._listings):
            listing.cancel()
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for session in sessions:
            with contextlib.suppress(Exception):
                await session.close()

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"no session {session_id!r} is open"})
        return session

    async def _open(self, cwd: str, servers: Sequence[Any], *, resume: str | None) -> AcpSession:
        folder = Path(cwd)
        if not folder.is_absolute() or not await asyncio.to_thread(folder.is_dir):
            raise RequestError.invalid_params({"message": f"cwd must be an absolute path of a folder, got {cwd!r}"})

        async def editor_tools(stack: contextlib.AsyncExitStack) -> Sequence[Tool]:
            return await start_editor_servers(stack, servers, folder)

        try:
            session = await AcpSession.open(
                self._options,
                folder,
                self._ask,
                resume=resume,
                extra_tools=editor_tools if servers else None,
                read_editor=self._read if self._editor_reads else None,
                write_editor=self._write if self._editor_writes else None,
                notify=self._send,
            )
        except SessionNotFoundError as error:
            raise RequestError.resource_not_found(resume) from error
        except IronHiveError as error:
            raise RequestError(-32603, str(error)) from error
        self._sessions[session.session_id] = session
        listing = asyncio.create_task(self._list_models(session))
        self._listings.add(listing)
        listing.add_done_callback(self._listings.discard)
        return session

    async def _list_models(self, session: AcpSession) -> None:
        """Ask the configured providers for their models after the session opened (offline, the session keeps its
        configured models); the editor hears of new ones as a ``config_option_update``."""
        try:
            if await session.refresh_models() and self._sessions.get(session.session_id) is session:
                await self._options_changed(session)
        except (ConnectionError, OSError, RequestError, IronHiveError) as error:
            log.info("the models could not be listed: %s", error)

    async def _options_changed(self, session: AcpSession) -> None:
        await self._send(
            session.session_id,
            ConfigOptionUpdate(session_update="config_option_update", config_options=list(session.config_options())),
        )

    async def _send(self, session_id: str, update: Update) -> None:
        if self._client is None:
            raise ConnectionError("no editor is connected")
        await self._client.session_update(session_id=session_id, update=update)

    async def _read(self, session_id: str, path: str, line: int | None, limit: int | None) -> str:
        if self._client is None:
            raise ConnectionError("no editor is connected")
        answer = await self._client.read_text_file(session_id=session_id, path=path, line=line, limit=limit)
        return answer.content

    async def _write(self, session_id: str, path: str, content: str) -> None:
        if self._client is None:
            raise ConnectionError("no editor is connected")
        await self._client.write_text_file(session_id=session_id, path=path, content=content)

    async def _ask(
        self, session_id: str, call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        if self._client is None:
            raise ConnectionError("no editor is connected")
        return await self._client.request_permission(session_id=session_id, tool_call=call, options=options)


async def start_editor_servers(stack: contextlib.AsyncExitStack, servers: Sequence[Any], cwd: Path) -> Sequence[Tool]:
    """Start the MCP servers the editor passed (``mcpServers``) on ``stack``; their tools join ironhive's."""
    from ironhive.acp.mcp_servers import server_configs
    from ironhive.adapters.mcp.provider import McpToolProvider

    configs = server_configs(servers, cwd)
    if not configs:
        return ()
    provider = await stack.enter_async_context(McpToolProvider(configs))
    return await provider.get_tools()
