"""Builds the agent loop that the CLI and the servers share: provider, tools, permissions, pipeline, approvals."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher
from ironhive.adapters.permissions.loader import load_permission_policy
from ironhive.adapters.tools.provider import BuiltInToolProvider
from ironhive.container import IronHiveContainer
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.context.budget import TokenBudgetChatClient
from ironhive.domain.context.catalog import context_window
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.summarizer import ModelSummarizer
from ironhive.domain.context.tokens import DEFAULT_COUNTER, TokenCounter
from ironhive.domain.invocation.gate import ApprovalGateMiddleware
from ironhive.domain.invocation.guards import (
    ArgumentParseFailureMiddleware,
    RepeatedCallGuardMiddleware,
    RepeatedErrorGuardMiddleware,
)
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline
from ironhive.domain.invocation.resilient import ResilientArgumentsMiddleware
from ironhive.domain.permissions.modes import Mode, ModeStateMachine
from ironhive.domain.permissions.policy import ToolCallPolicy
from ironhive.domain.prompts import DEFAULT_SYSTEM_PROMPT
from ironhive.ports.approval import ApprovalService
from ironhive.ports.chat import ChatClient, ChatOptions
from ironhive.providers import ProviderChoice

CLI_OPTIONS = ChatOptions(temperature=0.7, max_output_tokens=4096)


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentSettings:
    """How to build the agent of one CLI run or server session.

    Attributes:
        provider: The chat provider.
        working_directory: Where the tools work and what the permission rules are relative to.
        approval: Who answers the calls the rules ask about (the console, or the client over the wire).
        initial_mode: Working for the CLI, Planning with ``--plan``, Idle for ``run`` and the servers.
    """

    provider: ProviderChoice
    working_directory: Path
    approval: ApprovalService | None
    initial_mode: Mode = Mode.WORKING
    compaction: CompactionConfig = field(default_factory=CompactionConfig)


@dataclass(frozen=True, kw_only=True, slots=True)
class Agent:
    """A built agent: the loop, the mode machine its approval gate reads, and the provider's own client."""

    loop: AgentLoop
    modes: ModeStateMachine
    client: ChatClient


async def build_agent(settings: AgentSettings) -> Agent:
    """The agent of a CLI run or server session.

    Raises:
        ConfigurationError: A permission file or section is broken.
    """
    root = settings.working_directory.resolve()
    policy = load_permission_policy(root, None)
    modes = ModeStateMachine(settings.initial_mode)
    gate = ApprovalGateMiddleware(
        ToolCallPolicy(policy, root, GitIgnorePathMatcher()),
        settings.approval,
        mode=lambda: modes.mode,
        read_only_tools=policy.read_only_tools,
    )
    pipeline = ToolInvocationPipeline(
        [
            ArgumentParseFailureMiddleware(),
            RepeatedCallGuardMiddleware(),
            RepeatedErrorGuardMiddleware(),
            gate,
            ResilientArgumentsMiddleware(),
        ]
    )
    provider_client = settings.provider.build()  # builds no SDK client and loads no model yet
    window = context_window(
        settings.provider.model, configured=settings.compaction.max_context_tokens, client=provider_client
    )
    # A local model counts with its own tokenizer; remote ones with the chars ÷ 4 estimate.
    counter = provider_client if isinstance(provider_client, TokenCounter) else DEFAULT_COUNTER
    context = ContextManager(
        settings.compaction, window=window, counter=counter, summarizer=ModelSummarizer(provider_client)
    )
    container = IronHiveContainer().add_ironhive(
        # The context manager keeps every request within the window, so the budget guards the window itself: at the
        # original's 80 % it would refuse requests that compaction (which starts later on large windows) allows.
        chat_client=TokenBudgetChatClient(provider_client, window=window, threshold=1.0, counter=counter),
        context=context,
        tools=await BuiltInToolProvider(root).get_tools(),
        system_prompt=DEFAULT_SYSTEM_PROMPT,
        options=CLI_OPTIONS,
        pipeline=pipeline,
    )
    return Agent(loop=container.agent_loop(), modes=modes, client=provider_client)
