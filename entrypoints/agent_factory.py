"""Builds the agent that the CLI and the servers share: providers, tools, permissions, pipeline, context, approvals."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.config.schema import IronHiveConfig, permission_rules, sandbox_section
from ironhive.adapters.mcp.plugin_files import plugin_file_exists
from ironhive.adapters.permissions.loader import load_permission_policy
from ironhive.adapters.tools.sandbox import SandboxSettings
from ironhive.container import IronHiveContainer
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.failover import RetryPolicy
from ironhive.domain.options import ChatBehavior
from ironhive.domain.permissions.modes import Mode, ModeStateMachine
from ironhive.domain.prompts import DEFAULT_SYSTEM_PROMPT
from ironhive.domain.sessions import SessionBinding, SessionRequest
from ironhive.ports.approval import ApprovalService
from ironhive.ports.chat import ChatClient, ChatOptions
from ironhive.ports.tools import Tool
from ironhive.providers import ProviderChoice, provider_chain, select_provider

if TYPE_CHECKING:
    from ironhive.adapters.mcp.trust import TrustDecider

CLI_OPTIONS = ChatOptions(temperature=0.7, max_output_tokens=4096)


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentSettings:
    """How to build the agent of one CLI run or server session.

    Attributes:
        providers: The failover chain; the first is the selected provider.
        working_directory: Where the tools work and what the permission rules are relative to.
        approval: Who answers the calls the rules ask about (the console, or the client over the wire).
        initial_mode: Working for the CLI, Planning with ``--plan``, Idle for ``run`` and the servers.
        compaction: The ``compaction`` section.
        behavior: The ``chatBehavior`` section.
        permissions_section: The ``permissions`` section of config.yaml (used when the project has no permission file).
        sandbox: The ``permissions.sandbox`` section: whether and how ``execute_command`` is sandboxed.
        retry: Retries and backoff of the failover chain.
        config: The merged configuration, for the optional tools (skills, advisor, web); none of them without it.
        adapt_builtin_tools: Wraps the built-in tools once they are built (``ironhive acp``: reads see the editor's
            buffers); None keeps them as they are.
    """

    providers: Sequence[ProviderChoice]
    working_directory: Path
    approval: ApprovalService | None
    initial_mode: Mode = Mode.WORKING
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    behavior: ChatBehavior = field(default_factory=ChatBehavior)
    permissions_section: object | None = None
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    config: IronHiveConfig | None = None
    adapt_builtin_tools: Callable[[Sequence[Tool]], Sequence[Tool]] | None = None

    @classmethod
    def from_config(
        cls,
        config: IronHiveConfig,
        *,
        provider: str | None,
        model: str | None,
        working_directory: Path,
        approval: ApprovalService | None,
        initial_mode: Mode,
    ) -> AgentSettings:
        """Settings from the merged configuration and the command line.

        Raises:
            ConfigurationError: No provider fits, or a section is invalid.
        """
        chain = provider_chain(select_provider(provider, model, config), config)
        behavior = config.chat_behavior
        sandbox = sandbox_section(config.permissions)
        return cls(
            providers=tuple(chain),
            working_directory=working_directory,
            approval=approval,
            initial_mode=initial_mode,
            compaction=config.compaction.to_domain(),
            behavior=ChatBehavior(
                maximum_iterations_per_request=behavior.maximum_iterations_per_request,
                maximum_consecutive_errors_per_request=behavior.maximum_consecutive_errors_per_request,
            ),
            permissions_section=permission_rules(config.permissions),
            sandbox=SandboxSettings(enabled=sandbox.enabled, network=sandbox.network),
            retry=RetryPolicy(
                max_retries=config.providers.max_retries,
                initial_backoff=float(config.providers.initial_backoff_seconds),
            ),
            config=config,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Agent:
    """A built agent: the loop, the mode machine its approval gate reads, the selected provider's client, and the
    container it was resolved from (its session store and execution log)."""

    loop: AgentLoop
    modes: ModeStateMachine
    client: ChatClient
    provider: ProviderChoice
    container: IronHiveContainer

    async def open_session(self, request: SessionRequest) -> SessionBinding:
        """Bind the loop to its stored session (created, continued, resumed or forked as ``request`` says).

        Raises:
            SessionNotFoundError: ``request`` resumes a session this project does not have.
        """
        return await SessionBinding.open(
            self.loop,
            request,
            model=self.provider.model,
            store=self.container.session_store(),
            log=self.container.execution_log(),
        )


@asynccontextmanager
async def open_agent(
    settings: AgentSettings, *, trust: TrustDecider | None = None, extra_tools: Sequence[Tool] = ()
) -> AsyncIterator[Agent]:
    """The agent of a CLI run or server session, with its MCP plugin servers running while the block runs.

    Args:
        settings: How to build it.
        trust: Asked whether an untrusted project plugin file may start its processes (denied when ``None``).
        extra_tools: Tools the caller started itself (an editor's MCP servers over ACP), before the plugin tools.

    Raises:
        ConfigurationError: A permission file, plugin file or section is broken, or a provider cannot be built.
    """
    project = settings.working_directory.resolve()
    if not plugin_file_exists(project, Path.home()):  # nothing to start: the MCP adapter and its SDK stay unimported
        yield await build_agent(settings, extra_tools=extra_tools)
        return
    from ironhive.adapters.mcp.provider import McpToolProvider

    async with McpToolProvider.from_config(project, trust=trust) as plugins:
        yield await build_agent(settings, extra_tools=[*extra_tools, *await plugins.get_tools()])


def agent_container(
    settings: AgentSettings, *, extra_tools: Sequence[Tool] = (), clients: Sequence[ChatClient] | None = None
) -> IronHiveContainer:
    """The container of a CLI run or server session: the default graph with this run's settings in its slots.

    ``clients`` (one per provider of ``settings.providers``) are used instead of building the chain's clients; the
    container does not close them (their owner does: a server shares them across its sessions).

    Raises:
        ConfigurationError: A permission file or section is broken.
    """
    root = settings.working_directory.resolve()
    container = IronHiveContainer().override(
        configuration=settings.config,
        provider_choices=tuple(settings.providers),
        working_directory=root,
        permission_policy=load_permission_policy(root, settings.permissions_section),  # type: ignore[arg-type]
        sandbox=settings.sandbox,
        initial_mode=settings.initial_mode,
        approval_service=settings.approval,
        compaction=settings.compaction,
        behavior=settings.behavior,
        retry=settings.retry,
        system_prompt=DEFAULT_SYSTEM_PROMPT,
        options=CLI_OPTIONS,
        provided_tools=tuple(extra_tools),
    )
    if clients is not None:
        if len(clients) != len(settings.providers):
            raise ValueError(f"{len(clients)} clients given for a chain of {len(settings.providers)} providers")
        container.override(chat_clients=tuple(clients))
    if settings.adapt_builtin_tools is not None:
        container.override(builtin_tools=tuple(settings.adapt_builtin_tools(container.slots.builtin_tools())))
    return container


async def build_agent(
    settings: AgentSettings, *, extra_tools: Sequence[Tool] = (), clients: Sequence[ChatClient] | None = None
) -> Agent:
    """The agent of a CLI run or server session (without plugin servers; see ``open_agent``); ``clients`` as in
    :func:`agent_container`.

    Raises:
        ConfigurationError: A permission file or section is broken, or a provider cannot be built.
    """
    container = agent_container(settings, extra_tools=extra_tools, clients=clients)
    return Agent(
        loop=container.agent_loop(),
        modes=container.modes(),
        client=container.slots.primary_client(),
        provider=settings.providers[0],
        container=container,
    )
