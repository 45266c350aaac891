"""IronHiveContainer: the dependency-injection container and the ``add_ironhive*`` registration helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self
from urllib.parse import urlparse

from dependency_injector import containers, providers

from ironhive.adapters.system import SystemClock, UuidIdGenerator
from ironhive.domain.agent_loop import AgentLoop, TurnObserver
from ironhive.domain.context.catalog import context_window
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.summarizer import ModelSummarizer
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline
from ironhive.domain.options import ChatBehavior
from ironhive.ports.chat import ChatClient, ChatOptions
from ironhive.ports.system import Clock, IdGenerator
from ironhive.ports.tools import Tool


def _unregistered() -> ChatClient:
    raise LookupError(
        "No chat client is registered: call add_ironhive(chat_client=...) or one of the add_ironhive_with_* helpers."
    )


class IronHiveSlots(containers.DeclarativeContainer):
    """One slot per port; ``IronHiveContainer`` fills them."""

    clock = providers.Singleton(SystemClock)
    id_generator = providers.Singleton(UuidIdGenerator)
    chat_client = providers.Singleton(_unregistered)
    tools = providers.Object(())
    system_prompt: providers.Object[str | None] = providers.Object(None)
    options: providers.Object[ChatOptions | None] = providers.Object(None)
    behavior: providers.Object[ChatBehavior | None] = providers.Object(None)
    pipeline: providers.Object[ToolInvocationPipeline | None] = providers.Object(None)
    observers = providers.Object(())
    context: providers.Object[ContextManager | None] = providers.Object(None)
    agent_loop = providers.Factory(
        AgentLoop,
        chat_client,
        clock=clock,
        tools=tools,
        system_prompt=system_prompt,
        options=options,
        behavior=behavior,
        pipeline=pipeline,
        observers=observers,
        context=context,
    )


def _context_manager(config: CompactionConfig, client: ChatClient) -> ContextManager:
    """A fresh context manager per loop (it caches per conversation), sized for the client's model."""
    model = getattr(client, "model", None)
    window = context_window(
        model if isinstance(model, str) else None, configured=config.max_context_tokens, client=client
    )
    return ContextManager(config, window=window, summarizer=ModelSummarizer(client))


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


class IronHiveContainer:
    """The composition root every surface (CLI, servers, SDK) builds its agent through.

    Registration validates its arguments at once but builds no SDK client: the chat client is created on first use.

    Example:
        >>> loop = IronHiveContainer().add_ironhive_with_openai(api_key, "gpt-4o-mini").agent_loop()
    """

    def __init__(self) -> None:
        self.slots = IronHiveSlots()

    def add_ironhive(
        self,
        *,
        chat_client: ChatClient | None = None,
        chat_client_factory: Callable[[], ChatClient] | None = None,
        tools: Sequence[Tool] = (),
        system_prompt: str | None = None,
        options: ChatOptions | None = None,
        behavior: ChatBehavior | None = None,
        pipeline: ToolInvocationPipeline | None = None,
        observers: Sequence[TurnObserver] = (),
        context: ContextManager | CompactionConfig | None = None,
    ) -> Self:
        """Register the agent on a chat client (given, or built by a factory on first use).

        Args:
            chat_client: A ready chat client.
            chat_client_factory: Builds the chat client on first use (exclusive with ``chat_client``).
            tools: The tools the model may call.
            system_prompt: The system prompt of every conversation.
            options: The configured chat options (per-turn options merge onto them).
            behavior: Caps on tool rounds per request.
            pipeline: The tool invocation pipeline (guards, approval gate, ...); a bare one by default.
            observers: Turn observers that may add an addendum to a turn.
            context: Context compaction: a ready ContextManager, or a CompactionConfig (the window is then taken
                from a client that knows its own, else the catalog by ``model``). Compaction is on by default.

        Returns:
            The container, for chaining.

        Raises:
            ValueError: Neither or both of ``chat_client`` and ``chat_client_factory``, or a wrong type.
        """
        if (chat_client is None) == (chat_client_factory is None):
            raise ValueError("Pass exactly one of chat_client and chat_client_factory.")
        if chat_client is not None and not isinstance(chat_client, ChatClient):
            raise ValueError("chat_client must implement the ChatClient port (get_response, get_streaming_response).")
        if chat_client_factory is not None and not callable(chat_client_factory):
            raise ValueError("chat_client_factory must be callable.")
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ValueError(f"{tool!r} does not implement the Tool port (spec, invoke).")
        slots = self.slots
        if chat_client is not None:
            slots.chat_client.override(providers.Object(chat_client))
        else:
            slots.chat_client.override(providers.Singleton(chat_client_factory))
        slots.tools.override(providers.Object(tuple(tools)))
        slots.system_prompt.override(providers.Object(system_prompt))
        slots.options.override(providers.Object(options))
        slots.behavior.override(providers.Object(behavior))
        slots.pipeline.override(providers.Object(pipeline))
        slots.observers.override(providers.Object(tuple(observers)))
        if isinstance(context, ContextManager):
            slots.context.override(providers.Object(context))
        else:
            slots.context.override(
                providers.Factory(_context_manager, context or CompactionConfig(), slots.chat_client)
            )
        return self

    def add_ironhive_with_openai(self, api_key: str, model: str = "gpt-4o-mini", **settings: object) -> Self:
        """Register the agent on OpenAI.

        Args:
            api_key: The OpenAI API key.
            model: The model name.
            **settings: Further ``add_ironhive`` arguments (tools, system_prompt, ...).

        Returns:
            The container, for chaining.
        """
        return self._add_openai_compatible(None, _require_text("api_key", api_key), model, "openai", settings)

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
        self, model: str = "llama3.2", endpoint: str = "http://localhost:11434/v1", **settings: object
    ) -> Self:
        """Register the agent on a local Ollama server (its OpenAI-compatible endpoint).

        Args:
            model: The Ollama model name.
            endpoint: Ollama's OpenAI-compatible base URL.
            **settings: Further ``add_ironhive`` arguments.

        Returns:
            The container, for chaining.
        """
        return self._add_openai_compatible(_require_endpoint(endpoint), "ollama", model, "ollama", settings)

    def agent_loop(self) -> AgentLoop:
        """A ready agent loop with a fresh conversation."""
        loop: AgentLoop = self.slots.agent_loop()
        return loop

    def chat_client(self) -> ChatClient:
        """The registered chat client (built on first use)."""
        client: ChatClient = self.slots.chat_client()
        return client

    def clock(self) -> Clock:
        """The clock every part of the agent uses."""
        clock: Clock = self.slots.clock()
        return clock

    def id_generator(self) -> IdGenerator:
        """The id generator every part of the agent uses."""
        ids: IdGenerator = self.slots.id_generator()
        return ids

    def _add_openai_compatible(
        self, endpoint: str | None, api_key: str, model: str, provider_name: str, settings: dict[str, object]
    ) -> Self:
        model = _require_text("model", model)

        def build() -> ChatClient:
            from ironhive.adapters.openai.client import OpenAIChatClient

            return OpenAIChatClient(api_key=api_key, model=model, base_url=endpoint, provider_name=provider_name)

        return self.add_ironhive(chat_client_factory=build, **settings)  # type: ignore[arg-type]
