"""The tools the configuration turns on: Agent Skills (``load_skill``), the ``advisor`` and the web tools."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.domain.invocation.pipeline import ToolMiddleware
from ironhive.ports.chat import ChatClient, ChatMessage
from ironhive.ports.tools import Tool
from ironhive.providers import canonical, provider_choice


@dataclass(kw_only=True, slots=True)
class OptionalTools:
    """What the optional features add to an agent.

    Attributes:
        tools: Tools to offer.
        instructions: Text appended to the system prompt (the skills' names and descriptions).
        middlewares: Pipeline steps they need (the advisor's view of the current turn).
    """

    tools: list[Tool] = field(default_factory=list)
    instructions: str = ""
    middlewares: list[ToolMiddleware] = field(default_factory=list)


def _client_for(
    config: IronHiveConfig, provider: str | None, model: str | None, *, current: ChatClient, current_provider: str
) -> ChatClient:
    """A client of ``provider``/``model``: the working model's client when both are unset; the working model's
    provider when only ``model`` is set."""
    if provider is None and model is None:
        return current
    return provider_choice(canonical(provider) if provider else current_provider, config, model).build()


def optional_tools(
    config: IronHiveConfig,
    *,
    project: Path,
    client: ChatClient,
    provider: str,
    history: Callable[[], Sequence[ChatMessage]],
    system_prompt: str,
) -> OptionalTools:
    """Build the optional tools the configuration asks for; problems are reported on stderr.

    Args:
        config: The merged configuration.
        project: The working directory (relative skill roots resolve against it).
        client: The working model's client (the default for the advisor and deep research).
        provider: The working model's provider name.
        history: The loop's finished turns (for the advisor's transcript).
        system_prompt: The working model's system prompt (shown to the advisor).
    """
    added = OptionalTools()
    if config.skills.roots or config.skills.enabled:  # else there is nothing to find nor to report
        from ironhive.adapters.skills.loader import SkillsLoader

        skills = SkillsLoader.from_section(config.skills, cwd=project)
        for problem in skills.problems:
            sys.stderr.write(f"Skills: {problem}\n")
        if skills.active:
            added.tools.append(skills.load_tool)
            added.instructions = skills.metadata_block()
    advisor = config.advisor
    if advisor.model and advisor.max_calls >= 1:
        from ironhive.adapters.advisor.tap import TurnConversationTap
        from ironhive.adapters.advisor.tool import AdvisorTool

        tap = TurnConversationTap()
        added.middlewares.append(tap)
        advisor_client = _client_for(config, advisor.provider, advisor.model, current=client, current_provider=provider)
        added.tools.append(
            AdvisorTool.from_section(advisor, advisor_client, conversation=tap.conversation(history, system_prompt))
        )
    research = config.deep_research
    research_client = (
        _client_for(config, research.provider, research.model, current=client, current_provider=provider)
        if research.enabled
        else None
    )
    from ironhive.adapters.web.tools import build_web_tools

    added.tools.extend(build_web_tools(config.web_search, research, research_client=research_client))
    return added
