"""Turns arguments that do not fit a tool into a numbered recovery directive the model can act on."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from ironhive.domain.errors import ToolArgumentError
from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolOutcome
from ironhive.ports.chat import JsonValue
from ironhive.ports.tools import Tool

_REQUIRED_PARAMETER = re.compile(r"required parameter '([^']+)'")
_DIRECTIVE_OPENING = "was not run: its arguments do not fit its parameters"


def is_recovery_directive(result: str) -> bool:
    """Whether ``result`` is a recovery directive (the tool answered, though not with success)."""
    return result.startswith("Tool '") and _DIRECTIVE_OPENING in result.split("\n", 1)[0]


def recovery_directive(tool_name: str, error: ToolArgumentError) -> str:
    """The directive for a call whose parsed arguments do not fit the tool.

    Args:
        tool_name: The tool that was called.
        error: What did not fit; its ``parameter`` (or a "required parameter 'X'" in its message) names the culprit.

    Returns:
        Numbered steps naming the parameter, where to find its value, and forbidding an empty retry.
    """
    parameter = error.parameter
    if parameter is None and (match := _REQUIRED_PARAMETER.search(str(error))):
        parameter = match.group(1)
    subject = f"the parameter '{parameter}'" if parameter else "the parameters the error names"
    return (
        f"Tool '{tool_name}' {_DIRECTIVE_OPENING} ({error}).\n"
        "To recover:\n"
        f"1. Supply {subject} with a value of the type the tool's schema asks for.\n"
        "2. Take the value from the user's request or from earlier tool results in this conversation; if it is "
        "not there, ask the user for it instead of guessing.\n"
        f"3. Call '{tool_name}' again with one complete JSON object holding every required parameter.\n"
        "4. Do not retry with empty arguments ({}) or with the same arguments."
    )


def json_error_message(tool_name: str, error: json.JSONDecodeError) -> str:
    """The message for a tool that could not parse JSON inside its arguments."""
    return (
        f"Tool '{tool_name}' could not parse the arguments JSON: {error}. "
        "Retry with a valid JSON object whose keys match the parameter schema."
    )


def argument_failure_text(tool_name: str, error: Exception) -> str | None:
    """The model-actionable text for an argument failure, or ``None`` when ``error`` is not one."""
    if isinstance(error, ToolArgumentError):
        return recovery_directive(tool_name, error)
    if isinstance(error, json.JSONDecodeError):
        return json_error_message(tool_name, error)
    return None


class ResilientArgumentsMiddleware:
    """The last pipeline step: argument mismatches become recovery directives; other errors pass through."""

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Run the call, answering an argument error with a directive instead of an error."""
        try:
            return await next_step(invocation)
        except Exception as error:
            text = argument_failure_text(invocation.call.name, error)
            if text is None:
                raise
            return ToolOutcome(result=text, success=False)


async def resilient_function_invoker(tool: Tool, arguments: Mapping[str, JsonValue]) -> str:
    """The resilient behaviour as a plain invocation hook, for clients that run tools without the pipeline.

    Args:
        tool: The tool to run.
        arguments: Its parsed arguments.

    Returns:
        The tool's result, or a recovery directive when the arguments do not fit.
    """
    try:
        return await tool.invoke(arguments)
    except Exception as error:
        text = argument_failure_text(tool.spec.name, error)
        if text is None:
            raise
        return text
