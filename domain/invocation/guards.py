"""Loop guards of the pipeline: unparseable arguments, repeated identical calls, repeated identical errors."""

from __future__ import annotations

from ironhive.domain.invocation.exchanges import call_identity, current_turn, tool_exchanges
from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolOutcome, describe_error
from ironhive.domain.invocation.resilient import is_recovery_directive


class ArgumentParseFailureMiddleware:
    """Refuses a call whose arguments text could not be parsed, before the tool runs."""

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Refuse a call with unparseable arguments; pass the others on."""
        error = invocation.call.parse_error
        if error is None:
            return await next_step(invocation)
        return ToolOutcome(
            result=f"{error}. Re-issue the call with complete arguments that are valid JSON matching the tool's "
            "schema.",
            success=False,
        )


class RepeatedCallGuardMiddleware:
    """Refuses a call that already succeeded ``max_repeated_calls`` times in a row with the same arguments.

    The streak is read from the current turn of the conversation: any other call, a failure or a refusal breaks it.
    A recovery directive for unfitting arguments counts as answered, so a model that keeps repeating the same empty
    arguments is refused after three directives.
    """

    def __init__(self, max_repeated_calls: int = 3) -> None:
        self._limit = max_repeated_calls

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Refuse the call when its streak of identical successes reached the limit."""
        if self._limit > 0 and self._streak(invocation) >= self._limit:
            name = invocation.call.name
            return ToolOutcome(
                result=(
                    f"'{name}' already ran {self._limit} times in a row with these same arguments. Its result is in "
                    "the conversation; do not call it again with these arguments — use that result, or call a "
                    "different tool or change the arguments."
                ),
                success=False,
            )
        return await next_step(invocation)

    @staticmethod
    def _streak(invocation: ToolInvocation) -> int:
        identity = call_identity(invocation.call.name, invocation.arguments)
        streak = 0
        for exchange in reversed(tool_exchanges(current_turn(invocation.conversation))):
            same = call_identity(exchange.call.name, exchange.call.arguments) == identity
            answered = exchange.result.success or is_recovery_directive(exchange.result.result)
            if not (same and answered):
                break
            streak += 1
        return streak


class RepeatedErrorGuardMiddleware:
    """Stops the request when a tool fails with the same error ``max_repeated_errors`` times in a row.

    Below the limit the failure passes through unchanged, so the model sees it and can correct itself.
    """

    def __init__(self, max_repeated_errors: int = 3) -> None:
        self._limit = max_repeated_errors

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Run the call; turn its failure into a stop when it repeats the same error up to the limit."""
        try:
            return await next_step(invocation)
        except Exception as error:
            if self._limit <= 0:
                raise
            text = describe_error(error)
            if self._earlier_identical_failures(invocation, text) + 1 < self._limit:
                raise
            return ToolOutcome(
                result=(
                    f"'{invocation.call.name}' failed with the same error {self._limit} times in a row ({text}); "
                    "the request was stopped."
                ),
                success=False,
                terminate=True,
            )

    @staticmethod
    def _earlier_identical_failures(invocation: ToolInvocation, text: str) -> int:
        count = 0
        for exchange in reversed(tool_exchanges(current_turn(invocation.conversation))):
            result = exchange.result
            if exchange.call.name != invocation.call.name or result.success is not False or result.result != text:
                break
            count += 1
        return count
