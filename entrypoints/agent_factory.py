"""Builds the agent loop that the CLI and the servers share: provider, tools, pipeline, approvals, prompts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ironhive.adapters.tools.provider import BuiltInToolProvider
from ironhive.container import IronHiveContainer
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.invocation.guards import (
    ArgumentParseFailureMiddleware,
    RepeatedCallGuardMiddleware,
    RepeatedErrorGuardMiddleware,
)
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline, ToolMiddleware
from ironhive.domain.invocation.resilient import ResilientArgumentsMiddleware
from ironhive.domain.prompts import DEFAULT_SYSTEM_PROMPT
from ironhive.ports.chat import ChatOptions
from ironhive.providers import ProviderChoice

CLI_OPTIONS = ChatOptions(temperature=0.7, max_output_tokens=4096)


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentSettings:
    """How to build the agent of one CLI run or server session."""

    provider: ProviderChoice
    working_directory: Path
    planning: bool = False


def tool_pipeline(gate: ToolMiddleware) -> ToolInvocationPipeline:
    """The pipeline of the CLI and servers: parse failures, loop guards, the approval gate, resilient arguments."""
    return ToolInvocationPipeline(
        [
            ArgumentParseFailureMiddleware(),
            RepeatedCallGuardMiddleware(),
            RepeatedErrorGuardMiddleware(),
            gate,
            ResilientArgumentsMiddleware(),
        ]
    )


async def build_agent(settings: AgentSettings) -> AgentLoop:
    """The agent loop of a CLI run or server session."""
    tools = await BuiltInToolProvider(settings.working_directory).get_tools()
    container = IronHiveContainer().add_ironhive(
        chat_client_factory=settings.provider.build,
        tools=tools,
        system_prompt=DEFAULT_SYSTEM_PROMPT,
        options=CLI_OPTIONS,
    )
    return container.agent_loop()
