"""TurnConversationTap: a tool middleware that lets a running tool see the current turn's messages."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence

from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolOutcome
from ironhive.ports.chat import ChatMessage, Role


class TurnConversationTap:
    """Remembers, for the duration of each tool call, the messages of the turn that made it.

    ``AgentLoop.history`` holds finished turns only; the turn in progress (the user's message, the assistant's
    messages and earlier tool results) travels with each call as ``ToolInvocation.conversation``. Installed in the
    tool invocation pipeline, this step publishes it in a context variable, so concurrent sessions and parallel calls
    each see their own turn.

    Typical wiring in the loop factory::

        tap = TurnConversationTap()
        pipeline = pipeline.with_middleware(tap)
        advisor = AdvisorTool(client, conversation=tap.conversation(lambda: loop.history, system_prompt))
    """

    def __init__(self) -> None:
        self._current: contextvars.ContextVar[tuple[ChatMessage, ...]] = contextvars.ContextVar(
            f"ironhive-turn-{id(self)}", default=()
        )

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Publish the invocation's turn messages while the rest of the pipeline (and the tool) runs."""
        token = self._current.set(tuple(invocation.conversation))
        try:
            return await next_step(invocation)
        finally:
            self._current.reset(token)

    def current_turn(self) -> tuple[ChatMessage, ...]:
        """The current turn's messages as seen by the tool call in progress (empty outside a tool call)."""
        return self._current.get()

    def conversation(
        self, history: Callable[[], Sequence[ChatMessage]], system_prompt: str | None = None
    ) -> Callable[[], list[ChatMessage]]:
        """A ``conversation`` callable for :class:`~ironhive.adapters.advisor.tool.AdvisorTool`.

        Args:
            history: Returns the finished turns (e.g. ``lambda: loop.history``).
            system_prompt: The working model's system prompt, shown as "Agent instructions".

        Returns:
            A callable giving system prompt + history + current turn.
        """

        def build() -> list[ChatMessage]:
            system = [ChatMessage.of_text(Role.SYSTEM, system_prompt)] if system_prompt else []
            return [*system, *history(), *self.current_turn()]

        return build
