"""The tool invocation pipeline: middleware steps around each tool call, ending in the tool itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ironhive.domain.errors import ToolError
from ironhive.ports.chat import ChatMessage, JsonValue, ToolCallPart
from ironhive.ports.tools import Tool


@dataclass(kw_only=True, slots=True)
class ToolInvocation:
    """One tool call on its way through the pipeline.

    Attributes:
        call: The call as the model sent it.
        tool: The registered tool of that name, or ``None`` when there is none.
        arguments: The arguments the tool will receive; steps may replace them (approved edits).
        conversation: The messages of the current turn so far, including earlier results of this round.
    """

    call: ToolCallPart
    tool: Tool | None
    arguments: Mapping[str, JsonValue]
    conversation: Sequence[ChatMessage] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOutcome:
    """What a call produced.

    Attributes:
        result: The text the model reads.
        success: Whether the tool ran and succeeded; False for failures and refusals.
        terminate: Stop the request after this round (no further model call).
        raised: The tool raised an error that no step answered (counts towards the consecutive-error cap).
    """

    result: str
    success: bool
    terminate: bool = False
    raised: bool = False


NextStep = Callable[[ToolInvocation], Awaitable[ToolOutcome]]


class ToolMiddleware(Protocol):
    """One step of the pipeline. It may answer itself or pass the invocation on with ``next_step``."""

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Handle one invocation.

        Args:
            invocation: The call on its way to the tool.
            next_step: The rest of the pipeline.

        Returns:
            The outcome the model will see.
        """
        ...


async def run_tool(invocation: ToolInvocation) -> ToolOutcome:
    """The innermost step: run the tool. Errors propagate so middleware can see them."""
    if invocation.tool is None:
        raise ToolError(f"Tool '{invocation.call.name}' is not available.")
    return ToolOutcome(result=await invocation.tool.invoke(invocation.arguments), success=True)


def describe_error(error: Exception) -> str:
    """The text the model reads for a failure: a ToolError's own message, else "<Type>: <message>"."""
    if isinstance(error, ToolError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class ToolInvocationPipeline:
    """Runs each call through its middleware steps, outermost first, then the tool.

    An exception that no step turns into an outcome becomes a failed outcome here, so a tool failure reaches the model
    as a tool error and never crashes the turn.
    """

    def __init__(self, middlewares: Sequence[ToolMiddleware] = ()) -> None:
        self._middlewares = tuple(middlewares)

    def with_middleware(self, *middlewares: ToolMiddleware) -> ToolInvocationPipeline:
        """A new pipeline with ``middlewares`` appended, innermost last (closest to the tool)."""
        return ToolInvocationPipeline((*self._middlewares, *middlewares))

    async def invoke(self, invocation: ToolInvocation) -> ToolOutcome:
        """Run one call through the pipeline.

        Args:
            invocation: The call.

        Returns:
            Its outcome; never raises for a tool failure.
        """
        try:
            return await self._step(0)(invocation)
        except Exception as error:  # a failure the model should see, not a crash
            return ToolOutcome(result=describe_error(error), success=False, raised=True)

    def _step(self, index: int) -> NextStep:
        if index == len(self._middlewares):
            return run_tool
        middleware = self._middlewares[index]
        rest = self._step(index + 1)

        async def step(invocation: ToolInvocation) -> ToolOutcome:
            return await middleware(invocation, rest)

        return step
