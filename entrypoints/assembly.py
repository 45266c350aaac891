"""The factories behind the container's slots: each builds one part of the agent from the parts it depends on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.domain.agent_loop import AgentLoop, TurnObserver
from ironhive.domain.context.budget import TokenBudgetChatClient
from ironhive.domain.context.calibration import UsageCalibratingChatClient
from ironhive.domain.context.catalog import context_window
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.summarizer import ModelSummarizer
from ironhive.domain.context.tokens import (
    CalibratedCounter,
    MessageTokenCache,
    ProviderTokenCounter,
    TokenCounter,
    window_check_count,
)
from ironhive.domain.failover import ChainedProvider, FailoverChatClient, RetryPolicy
from ironhive.domain.invocation.gate import ApprovalGateMiddleware
from ironhive.domain.invocation.guards import (
    ArgumentParseFailureMiddleware,
    RepeatedCallGuardMiddleware,
    RepeatedErrorGuardMiddleware,
)
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline, ToolMiddleware
from ironhive.domain.invocation.resilient import ResilientArgumentsMiddleware
from ironhive.domain.options import ChatBehavior
from ironhive.domain.permissions.modes import ModeStateMachine
from ironhive.domain.permissions.policy import ToolCallPolicy
from ironhive.domain.permissions.rules import PermissionPolicy
from ironhive.ports.approval import ApprovalService
from ironhive.ports.chat import ChatClient, ChatMessage, ChatOptions
from ironhive.ports.system import Clock
from ironhive.ports.tools import Tool
from ironhive.providers import ProviderChoice

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.tools.sandbox import SandboxSettings
    from ironhive.optional_tools import OptionalTools


@dataclass(frozen=True, kw_only=True, slots=True)
class Safeguards:
    """Which protective steps the agent runs; every one is on unless switched off by name.

    Attributes:
        refuse_unparsable_arguments: A call whose arguments are not JSON is refused with a directive to resend.
        repeated_call_guard: The same call repeated in one request is refused from its 4th time.
        repeated_error_guard: A tool failing the same way again and again is stopped.
        resilient_arguments: A call with wrong arguments gets a recovery directive instead of a bare error.
        token_budget: A request that would not fit the model's window is refused before it is sent.
        compaction: Old turns are summarised before the conversation outgrows the window.
    """

    refuse_unparsable_arguments: bool = True
    repeated_call_guard: bool = True
    repeated_error_guard: bool = True
    resilient_arguments: bool = True
    token_budget: bool = True
    compaction: bool = True


class LoopReference:
    """The agent loops built so far: the advisor reads the latest's history (its tool is built before the loop), the
    container closes them all."""

    def __init__(self) -> None:
        self.loops: list[AgentLoop] = []

    def history(self) -> Sequence[ChatMessage]:
        """The latest loop's finished turns (none before a loop exists)."""
        return self.loops[-1].history if self.loops else ()


def chat_clients(choices: Sequence[ProviderChoice], built: list[ChatClient]) -> tuple[ChatClient, ...]:
    """The clients of the failover chain, in order (building a client opens no connection and loads no model).

    Each is also added to ``built``, the list the container closes when it closes.
    """
    if not choices:
        raise LookupError(
            "No chat client is registered: call add_ironhive(chat_client=...) or one of the add_ironhive_with_* "
            "helpers."
        )
    clients = tuple(choice.build() for choice in choices)
    built.extend(clients)
    return clients


def first_client(clients: Sequence[ChatClient]) -> ChatClient:
    """The selected provider's client: the first of the chain."""
    return clients[0]


def window_of(choices: Sequence[ProviderChoice], compaction: CompactionConfig, client: ChatClient) -> int | None:
    """The selected model's context window: configured, else what the client knows, else the catalog's."""
    model = choices[0].model if choices else getattr(client, "model", None)
    return context_window(
        model if isinstance(model, str) else None, configured=compaction.max_context_tokens, client=client
    )


def token_counter(choices: Sequence[ProviderChoice], client: ChatClient) -> TokenCounter:
    """The session's counter: a local model's own tokenizer, tiktoken for OpenAI's models, else chars ÷ 4; each
    corrected by the prompt tokens the selected provider reports (see ``model_stack``)."""
    if isinstance(client, TokenCounter):
        base: TokenCounter = client
    else:
        from ironhive.adapters.tokens.selection import counter_for

        model = choices[0].model if choices else getattr(client, "model", None)
        base = counter_for(choices[0].name if choices else None, model if isinstance(model, str) else None)
    return CalibratedCounter(base)


def context_manager(
    safeguards: Safeguards,
    compaction: CompactionConfig,
    window: int | None,
    counter: TokenCounter,
    client: ChatClient,
) -> ContextManager | None:
    """The context manager of one loop (it caches per conversation), or ``None`` with compaction off."""
    if not safeguards.compaction:
        return None
    return ContextManager(
        compaction,
        window=window,
        counter=counter,
        summarizer=ModelSummarizer(client),
        provider_counter=client if isinstance(client, ProviderTokenCounter) else None,
    )


def model_stack(
    choices: Sequence[ProviderChoice],
    clients: Sequence[ChatClient],
    *,
    window: int | None,
    counter: TokenCounter,
    retry: RetryPolicy,
    compaction: CompactionConfig,
    safeguards: Safeguards,
) -> ChatClient:
    """The chat client the loop talks to: the failover chain under the token budget.

    The context manager keeps every request within the window, so the budget guards the window itself: at the
    original's 80 % it would refuse requests that compaction (which starts later on large windows) allows.
    """
    # Even one provider goes through the chain: it retries transient errors with backoff.
    fitter = ContextManager(compaction, window=window, counter=counter, summarizer=ModelSummarizer(clients[0]))
    if isinstance(counter, CalibratedCounter):  # the selected provider's usage corrects its counter
        clients = [UsageCalibratingChatClient(clients[0], counter), *clients[1:]]

    async def fit(messages: Sequence[ChatMessage], limit: int) -> Sequence[ChatMessage]:
        return (await fitter.with_window(limit).prepare(messages)).messages

    providers = [
        ChainedProvider(
            name=choice.name,
            client=chained,
            window=window if index == 0 else context_window(choice.model, client=chained),
        )
        for index, (choice, chained) in enumerate(zip(choices, clients, strict=True))
    ]
    windows = [provider.window for provider in providers if provider.window is not None]
    client = FailoverChatClient(
        providers,
        policy=retry,
        count_tokens=window_check_count(MessageTokenCache(counter), min(windows, default=None)),
        fit=fit,
    )
    if not safeguards.token_budget:
        return client
    return TokenBudgetChatClient(client, window=window, threshold=1.0, counter=counter)


def tool_judge(policy: PermissionPolicy | None, working_directory: Path | None) -> ToolCallPolicy | None:
    """The permission rules' judge of every call, or ``None`` when the agent has no rules (every call runs)."""
    if policy is None:
        return None
    from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher

    return ToolCallPolicy(policy, (working_directory or Path.cwd()).resolve(), GitIgnorePathMatcher())


def approval_gate(
    judge: ToolCallPolicy | None,
    policy: PermissionPolicy | None,
    approval: ApprovalService | None,
    modes: ModeStateMachine,
) -> ApprovalGateMiddleware | None:
    """The gate that runs a call only when the mode and the rules allow it or a human approves it.

    Without an approval service an *ask* verdict is a rejection, never a pass.
    """
    if judge is None or policy is None:
        return None
    return ApprovalGateMiddleware(judge, approval, mode=lambda: modes.mode, read_only_tools=policy.read_only_tools)


def tool_pipeline(
    first_steps: Sequence[ToolMiddleware], safeguards: Safeguards, gate: ApprovalGateMiddleware | None
) -> ToolInvocationPipeline:
    """The invocation pipeline: the optional features' steps, the guards, the approval gate, argument recovery."""
    steps: list[ToolMiddleware] = list(first_steps)
    if safeguards.refuse_unparsable_arguments:
        steps.append(ArgumentParseFailureMiddleware())
    if safeguards.repeated_call_guard:
        steps.append(RepeatedCallGuardMiddleware())
    if safeguards.repeated_error_guard:
        steps.append(RepeatedErrorGuardMiddleware())
    if gate is not None:
        steps.append(gate)
    if safeguards.resilient_arguments:
        steps.append(ResilientArgumentsMiddleware())
    return ToolInvocationPipeline(steps)


def builtin_tools(
    working_directory: Path | None, sandbox: SandboxSettings | None, judge: ToolCallPolicy | None, clock: Clock
) -> tuple[Tool, ...]:
    """The built-in file and command tools on the working directory; none when the agent has no working directory."""
    if working_directory is None:
        return ()
    from ironhive.adapters.tools.provider import BuiltInToolProvider, PolicyReadRules
    from ironhive.adapters.tools.sandbox import CommandSandbox

    provider = BuiltInToolProvider(
        working_directory.resolve(),
        clock=clock,
        sandbox=CommandSandbox(sandbox) if sandbox is not None else None,
        read_rules=PolicyReadRules(judge) if judge is not None else None,
    )
    return tuple(provider.tools)


def configured_extras(
    config: IronHiveConfig | None,
    working_directory: Path | None,
    choices: Sequence[ProviderChoice],
    client: ChatClient,
    loop: LoopReference,
    system_prompt: str | None,
) -> OptionalTools:
    """The tools the configuration turns on (skills, advisor, web); none without a configuration."""
    from ironhive.optional_tools import OptionalTools, optional_tools

    if config is None:
        return OptionalTools()
    return optional_tools(
        config,
        project=(working_directory or Path.cwd()).resolve(),
        client=client,
        provider=choices[0].name,
        history=loop.history,
        system_prompt=system_prompt or "",
    )


def extras_middlewares(extras: OptionalTools) -> tuple[ToolMiddleware, ...]:
    """The pipeline steps the optional features need."""
    return tuple(extras.middlewares)


def full_prompt(system_prompt: str | None, extras: OptionalTools) -> str | None:
    """The system prompt with the optional features' instructions appended."""
    parts = [part for part in (system_prompt, extras.instructions) if part]
    return "\n\n".join(parts) if parts else None


def all_tools(
    builtin: Sequence[Tool], extras: OptionalTools, provided: Sequence[Tool], app: Sequence[Tool]
) -> tuple[Tool, ...]:
    """Every tool the model may call: the built-in ones, the configured ones, the providers' and the app's own."""
    return (*builtin, *extras.tools, *provided, *app)


def agent_loop(
    reference: LoopReference,
    client: ChatClient,
    *,
    clock: Clock,
    tools: Sequence[Tool],
    system_prompt: str | None,
    options: ChatOptions | None,
    behavior: ChatBehavior | None,
    pipeline: ToolInvocationPipeline,
    observers: Sequence[TurnObserver],
    context: ContextManager | None,
) -> AgentLoop:
    """A loop with a fresh conversation; the reference keeps the latest for the advisor."""
    loop = AgentLoop(
        client,
        clock=clock,
        tools=tools,
        system_prompt=system_prompt,
        options=options,
        behavior=behavior,
        pipeline=pipeline,
        observers=observers,
        context=context,
    )
    reference.loops.append(loop)
    return loop
