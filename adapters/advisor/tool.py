"""AdvisorTool: sends the conversation so far to a stronger model and returns its review as the tool's result."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ironhive.adapters.tools.arguments import object_schema
from ironhive.domain.errors import ConfigurationError, ProviderError, ToolError
from ironhive.domain.transcript import render_transcript
from ironhive.ports.chat import ChatClient, ChatMessage, ChatOptions, JsonValue, Role, ToolSpec, Usage

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import AdvisorSection

ADVISOR_TOOL_NAME = "advisor"

DESCRIPTION = (
    "Consult a stronger reviewer model about the task so far. Takes no input: it reads the whole conversation, "
    "including your tool calls and their results. Call it before committing to an approach on a non-trivial task, "
    "when you are stuck or results do not fit, and before declaring the task done. Weigh its advice seriously."
)

DEFAULT_INSTRUCTIONS = (
    "You are the advisor to an AI agent that is partway through a task. You see its conversation: the user's "
    "request, its reasoning, the tools it called and what they returned. Review it as a senior colleague would. "
    "Say whether the approach is sound; point out mistakes, risks, unverified assumptions and missed requirements; "
    "and state the concrete next step you recommend. Be brief and specific: a few sentences or a short list. "
    "Do not redo the work, and do not repeat what the agent already knows."
)
"""The advisor's system instructions unless others are given: a senior reviewer on approach, risks and next step."""

TRANSCRIPT_INTRODUCTION = "Here is the agent's conversation so far."
TRANSCRIPT_REQUEST = "Review the work so far and advise the agent on what to do next."
NO_ADVICE = "The advisor returned no advice. Proceed on your own judgment."

PARAMETERS = object_schema({})


class AdvisorTool:
    """The ``advisor`` tool (no parameters).

    Each call renders the conversation (from ``conversation``) as a transcript with sections "Agent instructions",
    "User", "Agent" and "Tool results" (long tool results cut at 2000 characters) and sends it, after the
    advisor's instructions, to the advisor model with no tools offered. The model's answer is the tool's result. At
    most ``max_calls`` consultations per session (per tool instance); later calls are answered with a refusal
    without calling the model. A call that fails does not use up one of them.

    Args:
        client: The advisor model's chat client (usually stronger than the working model).
        conversation: Returns the conversation the advisor should review, oldest first: the working model's system
            prompt (as a SYSTEM message), the session history, and the current turn up to and including the
            assistant message that called the advisor (plus any results already in of that round). The factory can
            build it from ``AgentLoop.history`` and :class:`~ironhive.adapters.advisor.tap.TurnConversationTap`.
        max_calls: Consultations allowed per session (at least 1).
        model: The advisor model's id, sent as ``ChatOptions.model`` (``None``: the client's default).
        instructions: The advisor's system instructions.
        on_usage: Called with the token usage of each consultation, for session usage tracking and limits.

    Raises:
        ConfigurationError: ``max_calls`` is below 1.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        conversation: Callable[[], Sequence[ChatMessage]],
        max_calls: int = 5,
        model: str | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        on_usage: Callable[[Usage], None] | None = None,
    ) -> None:
        if max_calls < 1:
            raise ConfigurationError(
                f"advisor.maxCalls must be at least 1 for the advisor to be offered; got {max_calls}"
            )
        self._client = client
        self._conversation = conversation
        self._max_calls = max_calls
        self._instructions = instructions
        self._on_usage = on_usage
        self._options = ChatOptions(model=model, tools=())
        self._consulted = 0
        self._in_flight = 0
        self._lock = asyncio.Lock()
        self._spec = ToolSpec(name=ADVISOR_TOOL_NAME, description=DESCRIPTION, parameters=PARAMETERS)

    @classmethod
    def from_section(
        cls,
        section: AdvisorSection,
        client: ChatClient,
        *,
        conversation: Callable[[], Sequence[ChatMessage]],
        on_usage: Callable[[Usage], None] | None = None,
    ) -> AdvisorTool:
        """Build the tool from the ``advisor`` config section (offer it only when ``section.model`` is set).

        Args:
            section: The merged ``advisor`` section.
            client: The chat client of ``section.provider`` (or of the current provider when that is unset).
            conversation: See the class.
            on_usage: See the class.

        Returns:
            The tool.
        """
        return cls(
            client, conversation=conversation, max_calls=section.max_calls, model=section.model, on_usage=on_usage
        )

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and (empty) JSON schema."""
        return self._spec

    @property
    def consultations(self) -> int:
        """How many times the advisor has answered in this session."""
        return self._consulted

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Consult the advisor; whatever arguments the model sent are ignored (the tool takes none).

        Returns:
            The advisor's review, the empty-answer note or the call-cap refusal.

        Raises:
            ToolError: The advisor model failed.
        """
        async with self._lock:
            # Calls still running hold their slot, so parallel calls cannot overrun the cap.
            if self._consulted + self._in_flight >= self._max_calls:
                return (
                    f"The advisor has already been consulted {self._max_calls} times in this session. "
                    "Proceed on your own judgment."
                )
            self._in_flight += 1
        try:
            advice = await self._consult()
        except BaseException:
            async with self._lock:
                self._in_flight -= 1
            raise
        async with self._lock:
            self._in_flight -= 1
            self._consulted += 1
        return advice if advice.strip() else NO_ADVICE

    def request(self) -> list[ChatMessage]:
        """The messages a consultation sends now: the instructions, then the transcript as one user message."""
        transcript = render_transcript(self._conversation())
        body = (
            f"{TRANSCRIPT_INTRODUCTION}\n\n{transcript}\n\n{TRANSCRIPT_REQUEST}" if transcript else TRANSCRIPT_REQUEST
        )
        return [ChatMessage.of_text(Role.SYSTEM, self._instructions), ChatMessage.of_text(Role.USER, body)]

    async def _consult(self) -> str:
        try:
            response = await self._client.get_response(self.request(), self._options)
        except ProviderError as exc:
            raise ToolError(f"The advisor could not be consulted: {exc}") from exc
        if self._on_usage is not None and response.usage is not None:
            self._on_usage(response.usage)
        return response.message.text.strip()
