"""IronHiveContainer: the composition root every surface builds its agent through, and the ``add_ironhive*`` helpers."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self
from urllib.parse import urlparse

from dependency_injector import containers, providers

from ironhive import assembly
from ironhive.adapters.openai.spec import OLLAMA_ENDPOINT, ollama_base_url, openai_client
from ironhive.adapters.provider_spec import Connection
from ironhive.adapters.system import SystemClock, UuidIdGenerator
from ironhive.domain.agent_loop import AgentLoop, TurnObserver
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.failover import RetryPolicy
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline
from ironhive.domain.options import ChatBehavior
from ironhive.domain.permissions.modes import Mode, ModeStateMachine
from ironhive.domain.permissions.rules import PermissionPolicy
from ironhive.ports.approval import ApprovalService
from ironhive.ports.chat import ChatClient, ChatOptions
from ironhive.ports.sessions import ExecutionLog, SessionStore
from ironhive.ports.system import Clock, IdGenerator
from ironhive.ports.tools import Tool
from ironhive.providers import ProviderChoice

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.tools.sandbox import SandboxSettings


def _ironhive_home() -> Path:
    return Path.home() / ".ironhive"


def _session_store(home: Path, working_directory: Path | None) -> SessionStore:
    from ironhive.adapters.sessions.store import DiskCacheSessionStore

    return DiskCacheSessionStore(home, (working_directory or Path.cwd()).resolve())


def _execution_log(home: Path) -> ExecutionLog:
    from ironhive.adapters.sessions.execution_log import JsonlExecutionLog

    return JsonlExecutionLog(home / "logs")


class IronHiveSlots(containers.DeclarativeContainer):
    """The agent's whole graph: one slot per port or part, each with the default the CLI uses.

    A surface overrides only what differs (the approval service: the console's, the wire's or the app's; the providers;
    the working directory), then resolves ``agent_loop``.
    """

    # -- system --------------------------------------------------------------------------------------------------
    clock = providers.Singleton(SystemClock)
    id_generator = providers.Singleton(UuidIdGenerator)
    home = providers.Callable(_ironhive_home)
    configuration: providers.Object[IronHiveConfig | None] = providers.Object(
        None
    )  # the merged IronHiveConfig: turns on the optional tools

    # -- the model -----------------------------------------------------------------------------------------------
    provider_choices: providers.Object[Sequence[ProviderChoice]] = providers.Object(())
    built_clients: providers.Singleton[list[ChatClient]] = providers.Singleton(
        list
    )  # what the container closes when it closes
    chat_clients = providers.Singleton(assembly.chat_clients, provider_choices, built_clients)
    primary_client = providers.Singleton(assembly.first_client, chat_clients)
    safeguards = providers.Object(assembly.Safeguards())
    retry = providers.Object(RetryPolicy())
    compaction = providers.Object(CompactionConfig())
    context_window = providers.Singleton(assembly.window_of, provider_choices, compaction, primary_client)
    token_counter = providers.Singleton(assembly.token_counter, provider_choices, primary_client)
    chat_client = providers.Singleton(
        assembly.model_stack,
        provider_choices,
        chat_clients,
        window=context_window,
        counter=token_counter,
        retry=retry,
        compaction=compaction,
        safeguards=safeguards,
    )
    context = providers.Factory(
        assembly.context_manager, safeguards, compaction, context_window, token_counter, primary_client
    )

    # -- tools, permissions and approvals ------------------------------------------------------------------------
    working_directory: providers.Object[Path | None] = providers.Object(None)
    permission_policy: providers.Object[PermissionPolicy | None] = providers.Object(None)
    sandbox: providers.Object[SandboxSettings | None] = providers.Object(
        None
    )  # SandboxSettings of execute_command; unsandboxed when None
    initial_mode = providers.Object(Mode.WORKING)
    modes = providers.Singleton(ModeStateMachine, initial_mode)
    approval_service: providers.Object[ApprovalService | None] = providers.Object(None)
    judge = providers.Singleton(assembly.tool_judge, permission_policy, working_directory)
    approval_gate = providers.Singleton(assembly.approval_gate, judge, permission_policy, approval_service, modes)
    loop_reference = providers.Singleton(assembly.LoopReference)
    system_prompt: providers.Object[str | None] = providers.Object(None)
    extras = providers.Singleton(
        assembly.configured_extras,
        configuration,
        working_directory,
        provider_choices,
        primary_client,
        loop_reference,
        system_prompt,
    )
    pipeline = providers.Singleton(
        assembly.tool_pipeline, providers.Callable(assembly.extras_middlewares, extras), safeguards, approval_gate
    )
    builtin_tools = providers.Singleton(assembly.builtin_tools, working_directory, sandbox, judge, clock)
    provided_tools: providers.Object[Sequence[Tool]] = providers.Object(())  # from async tool providers (MCP)
    app_tools: providers.Object[Sequence[Tool]] = providers.Object(())
    tools = providers.Singleton(assembly.all_tools, builtin_tools, extras, provided_tools, app_tools)

    # -- sessions ------------------------------------------------------------------------------------------------
    session_store = providers.Singleton(_session_store, home, working_directory)
    execution_log = providers.Singleton(_execution_log, home)

    # -- the loop ------------------------------------------------------------------------------------------------
    options: providers.Object[ChatOptions | None] = providers.Object(None)
    behavior: providers.Object[ChatBehavior | None] = providers.Object(None)
    observers: providers.Object[Sequence[TurnObserver]] = providers.Object(())
    agent_loop = providers.Factory(
        assembly.agent_loop,
        loop_reference,
        chat_client,
        clock=clock,
        tools=tools,
        system_prompt=providers.Callable(assembly.full_prompt, system_prompt, extras),
        options=options,
        behavior=behavior,
        pipeline=pipeline,
        observers=observers,
        context=context,
    )


def _require_text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string.")
    return value


def _require_endpoint(endpoint: object) -> str:
    text = _require_text("endpoint", endpoint)
    parsed = urlparse(text)
    if parsed.scheme not in {"http", "https"} or not parsed.netloc:
        raise ValueError(f"endpoint must be an http(s) URL, got {text!r}.")
    return text


def _model_of(client: ChatClient) -> str:
    model = getattr(client, "model", None)
    return model if isinstance(model, str) else ""


class IronHiveContainer:
    """The composition root every surface (CLI, servers, SDK) builds its agent through.

    Registration validates its arguments at once but builds no SDK client: clients are created on first use. The
    container is a context manager (``with`` or ``async with``) that closes every client it built.

    Example:
        >>> with IronHiveContainer().add_ironhive_with_openai(api_key, "gpt-4o-mini", tools=[weather]) as hive:
        ...     print(hive.agent_loop().run_sync("Weather in Paris?").content)
    """

    def __init__(self) -> None:
        self.slots = IronHiveSlots()
        self._handed: list[ChatClient] = []  # clients the app passed in: the app closes them

    def add_ironhive(
        self,
        *,
        chat_client: ChatClient | None = None,
        chat_client_factory: Callable[[], ChatClient] | None = None,
        fallbacks: Sequence[ChatClient] = (),
        tools: Sequence[Tool] = (),
        system_prompt: str | None = None,
        options: ChatOptions | None = None,
        behavior: ChatBehavior | None = None,
        pipeline: ToolInvocationPipeline | None = None,
        observers: Sequence[TurnObserver] = (),
        context: ContextManager | CompactionConfig | None = None,
        approval: ApprovalService | None = None,
        permissions: PermissionPolicy | None = None,
        working_directory: Path | str | None = None,
        retry: RetryPolicy | None = None,
        refuse_unparsable_arguments: bool = True,
        repeated_call_guard: bool = True,
        repeated_error_guard: bool = True,
        resilient_arguments: bool = True,
        token_budget: bool = True,
        compaction: bool = True,
    ) -> Self:
        """Register the agent on a chat client (given, or built by a factory on first use).

        The agent gets the CLI's safeguards (each switchable off by its named argument) and, with a
        ``working_directory``, the CLI's built-in file and command tools under the permission rules.

        Args:
            chat_client: A ready chat client.
            chat_client_factory: Builds the chat client on first use (exclusive with ``chat_client``).
            fallbacks: Clients to fail over to, in order, when the first one keeps failing.
            tools: The app's own tools (``@tool`` functions or any ``Tool``).
            system_prompt: The system prompt of every conversation.
            options: The configured chat options (per-turn options merge onto them).
            behavior: Caps on tool rounds per request.
            pipeline: A whole invocation pipeline of your own, replacing the guarded default.
            observers: Turn observers that may add an addendum to a turn.
            context: A ready ContextManager, or the CompactionConfig the default one uses (the window is then taken
                from a client that knows its own, else the catalog by model).
            approval: Who answers the calls the permission rules ask about; without one an *ask* is a rejection.
            permissions: The permission rules every call is judged by (the project's rules or the built-in defaults
                when a ``working_directory`` is given; no rules, every call runs, otherwise).
            working_directory: Where the built-in tools work; gives the agent those tools and the permission rules.
            retry: Retries and backoff of the failover chain.
            refuse_unparsable_arguments: Refuse a call whose arguments are not JSON, with a directive to resend.
            repeated_call_guard: Refuse the same call from its 4th repetition in one request.
            repeated_error_guard: Stop a tool that keeps failing the same way.
            resilient_arguments: Turn wrong arguments into a recovery directive for the model.
            token_budget: Refuse a request that would not fit the model's window before sending it.
            compaction: Summarise old turns before the conversation outgrows the window.

        Returns:
            The container, for chaining.

        Raises:
            ValueError: Neither or both of ``chat_client`` and ``chat_client_factory``, or a wrong type.
            ConfigurationError: The project's permission file is broken (with a ``working_directory``).
        """
        if (chat_client is None) == (chat_client_factory is None):
            raise ValueError("Pass exactly one of chat_client and chat_client_factory.")
        if chat_client is not None and not isinstance(chat_client, ChatClient):
            raise ValueError("chat_client must implement the ChatClient port (get_response, get_streaming_response).")
        if chat_client_factory is not None and not callable(chat_client_factory):
            raise ValueError("chat_client_factory must be callable.")
        for client in fallbacks:
            if not isinstance(client, ChatClient):
                raise ValueError(f"{client!r} in fallbacks does not implement the ChatClient port.")
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ValueError(f"{tool!r} does not implement the Tool port (spec, invoke).")
        root = Path(working_directory).expanduser() if working_directory is not None else None
        if root is not None and permissions is None:
            from ironhive.adapters.permissions.loader import load_permission_policy

            permissions = load_permission_policy(root.resolve(), None)
        self._handed.extend(fallbacks)
        if chat_client is not None:
            self._handed.append(chat_client)
            given = chat_client
            first = ProviderChoice(name="app", model=_model_of(given), build=lambda: given)
        else:
            assert chat_client_factory is not None
            first = ProviderChoice(name="app", model="", build=chat_client_factory)
        chain = [
            first,
            *(
                ProviderChoice(name=f"fallback-{number}", model=_model_of(client), build=_constant(client))
                for number, client in enumerate(fallbacks, start=1)
            ),
        ]
        self.override(
            provider_choices=chain,
            app_tools=tuple(tools),
            system_prompt=system_prompt,
            options=options,
            behavior=behavior,
            observers=tuple(observers),
            approval_service=approval,
            permission_policy=permissions,
            working_directory=root,
            retry=retry or RetryPolicy(),
            safeguards=assembly.Safeguards(
                refuse_unparsable_arguments=refuse_unparsable_arguments,
                repeated_call_guard=repeated_call_guard,
                repeated_error_guard=repeated_error_guard,
                resilient_arguments=resilient_arguments,
                token_budget=token_budget,
                compaction=compaction,
            ),
        )
        if pipeline is not None:
            self.slots.pipeline.override(providers.Object(pipeline))
        if isinstance(context, ContextManager):
            self.slots.context.override(providers.Object(context))
        elif context is not None:
            self.override(compaction=context)
        return self

    def add_ironhive_with_openai(
        self,
        api_key: str,
        model: str = "gpt-4o-mini",
        *,
        endpoint: str | None = None,
        api: str | None = None,
        **settings: object,
    ) -> Self:
        """Register the agent on OpenAI (or, with ``endpoint``, any server speaking its API).

        As the CLI's ``openai`` provider does, OpenAI's own endpoint is spoken to over the Responses API and any other
        endpoint (an OpenAI-compatible server) over chat completions, unless ``api`` says which.

        Args:
            api_key: The OpenAI API key.
            model: The model name.
            endpoint: The API base URL (default: OpenAI's, or ``OPENAI_BASE_URL`` when set).
            api: ``"responses"`` or ``"chat"`` to override the choice by endpoint (the config key ``openai.api``).
            **settings: Further ``add_ironhive`` arguments (tools, system_prompt, approval, ...).

        Returns:
            The container, for chaining.

        Raises:
            ValueError: ``api`` is neither ``"responses"`` nor ``"chat"``.
        """
        base_url = _require_endpoint(endpoint) if endpoint is not None else None
        if api is not None and api not in _OPENAI_APIS:
            raise ValueError(f"api must be one of {', '.join(_OPENAI_APIS)}, not {api!r}.")
        return self._add_openai_compatible(
            base_url, _require_text("api_key", api_key), model, "openai", settings, api=api
        )

    def add_ironhive_with_openai_compatible(self, endpoint: str, api_key: str, model: str, **settings: object) -> Self:
        """Register the agent on any server speaking OpenAI chat completions (vLLM, llama.cpp server, ...).

        Args:
            endpoint: The base URL, e.g. ``http://localhost:8080/v1``.
            api_key: The server's key (any non-empty text when it needs none).
            model: The model name.
            **settings: Further ``add_ironhive`` arguments.

        Returns:
            The container, for chaining.
        """
        return self._add_openai_compatible(
            _require_endpoint(endpoint), _require_text("api_key", api_key), model, "openai-compatible", settings
        )

    def add_ironhive_with_ollama(
        self, model: str = "llama3.2", endpoint: str = OLLAMA_ENDPOINT, **settings: object
    ) -> Self:
        """Register the agent on a local Ollama server (its OpenAI-compatible endpoint).

        Args:
            model: The Ollama model name.
            endpoint: Ollama's address, with or without the ``/v1`` of its OpenAI-compatible API.
            **settings: Further ``add_ironhive`` arguments.

        Returns:
            The container, for chaining.
        """
        return self._add_openai_compatible(
            ollama_base_url(_require_endpoint(endpoint)), "ollama", model, "ollama", settings
        )

    def override(self, **values: object) -> Self:
        """Put fixed values into slots by name (``approval_service=...``, ``working_directory=...``).

        Raises:
            ValueError: A name is not a slot.
        """
        for name, value in values.items():
            slot = getattr(self.slots, name, None)
            if not isinstance(slot, providers.Provider):
                raise ValueError(f"IronHiveContainer has no slot named {name!r}.")
            slot.override(providers.Object(value))
        return self

    def agent_loop(self) -> AgentLoop:
        """A ready agent loop with a fresh conversation."""
        loop: AgentLoop = self.slots.agent_loop()
        return loop

    def chat_client(self) -> ChatClient:
        """The chat client the loop talks to: the registered client under failover and the token budget."""
        client: ChatClient = self.slots.chat_client()
        return client

    def modes(self) -> ModeStateMachine:
        """The permission mode the approval gate reads (Working, Planning, Idle)."""
        machine: ModeStateMachine = self.slots.modes()
        return machine

    def session_store(self) -> SessionStore:
        """Where conversations are kept (``~/.ironhive/sessions``, per working directory)."""
        store: SessionStore = self.slots.session_store()
        return store

    def execution_log(self) -> ExecutionLog:
        """Where every turn's prompt, tool calls and usage are logged."""
        log: ExecutionLog = self.slots.execution_log()
        return log

    def clock(self) -> Clock:
        """The clock every part of the agent uses."""
        clock: Clock = self.slots.clock()
        return clock

    def id_generator(self) -> IdGenerator:
        """The id generator every part of the agent uses."""
        ids: IdGenerator = self.slots.id_generator()
        return ids

    async def aclose(self) -> None:
        """Close every chat client the container built (clients it was handed are the app's to close), then the
        private event loops of the agents' ``*_sync`` methods."""
        for close in self._client_closers():
            with contextlib.suppress(Exception):
                await close()
        self._forget_clients()
        for loop in self._built_loops():
            loop.close()

    def close(self) -> None:
        """Close every chat client the container built, from synchronous code.

        Clients used by ``run_sync`` are bound to the agent's private event loop, so they are closed on it.
        """
        closers = [_quiet(close) for close in self._client_closers()]
        self._forget_clients()
        loops = self._built_loops()
        if not loops:
            asyncio.run(_run_all(closers))
            return
        loops[-1].close(*closers)
        for loop in loops[:-1]:
            loop.close()

    def _client_closers(self) -> list[Callable[[], Awaitable[object]]]:
        built: list[ChatClient] = self.slots.built_clients()
        closers: list[Callable[[], Awaitable[object]]] = []
        for client in built:
            if any(client is handed for handed in self._handed):
                continue
            close = getattr(client, "aclose", None)
            if callable(close):
                closers.append(close)
        return closers

    def _forget_clients(self) -> None:
        self.slots.built_clients().clear()
        self.slots.chat_clients.reset()

    def _built_loops(self) -> list[AgentLoop]:
        reference: assembly.LoopReference = self.slots.loop_reference()
        loops = list(reference.loops)
        reference.loops.clear()
        return loops

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    def _add_openai_compatible(
        self,
        endpoint: str | None,
        api_key: str,
        model: str,
        provider_name: str,
        settings: dict[str, object],
        *,
        api: str | None = "chat",
    ) -> Self:
        """Register an OpenAI-wire provider; ``api=None`` chooses the API by the endpoint the SDK will use."""
        model = _require_text("model", model)

        def build() -> ChatClient:
            wire = api if api is not None else openai_api_for(endpoint, os.environ)
            connection = Connection(api_key=api_key, base_url=endpoint, model=model, api=wire)
            return openai_client(provider_name, connection, model)

        self.add_ironhive(chat_client_factory=build, **settings)  # type: ignore[arg-type]
        chain: Sequence[ProviderChoice] = self.slots.provider_choices()
        return self.override(
            provider_choices=[ProviderChoice(name=provider_name, model=model, build=build), *chain[1:]]
        )


_OPENAI_APIS = ("responses", "chat")


def openai_api_for(endpoint: str | None, environ: Mapping[str, str]) -> str:
    """The API the ``openai`` provider speaks to ``endpoint``: Responses on OpenAI's own, chat completions elsewhere.

    ``None`` means the SDK's default: ``OPENAI_BASE_URL`` when set, else OpenAI's endpoint.
    """
    from ironhive.adapters.config.schema import OpenAISection

    own = OpenAISection().endpoint.rstrip("/")
    effective = endpoint or environ.get("OPENAI_BASE_URL") or own
    return "responses" if effective.rstrip("/") == own else "chat"


def _constant(client: ChatClient) -> Callable[[], ChatClient]:
    return lambda: client


def _quiet(close: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
    """A clean-up step whose failure does not stop the next one (closing is best effort)."""

    async def step() -> None:
        with contextlib.suppress(Exception):
            await close()

    return step


async def _run_all(steps: Sequence[Callable[[], Awaitable[None]]]) -> None:
    for step in steps:
        await step()
