"""ironhive: a universal agent host — the composition root (container, CLI, server start-up)."""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: importing typing would double the cost of ``ironhive --version``.
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
    from ironhive.adapters.tools.function_tool import FunctionTool, tool
    from ironhive.container import IronHiveContainer
    from ironhive.domain.agent_loop import AgentLoop
    from ironhive.domain.errors import (
        ApprovalRejectedError,
        ConfigurationError,
        ContextOverflowError,
        IronHiveError,
        ProviderError,
        SessionNotFoundError,
        ToolArgumentError,
        ToolError,
        TurnOptionsError,
    )
    from ironhive.domain.turn import (
        AddendumChunk,
        AgentChunk,
        ContextCompactedChunk,
        FallbackChunk,
        TextDelta,
        ThinkingDelta,
        ToolCallChunk,
        ToolCallRecord,
        ToolResultChunk,
        TurnCompleted,
        TurnRecord,
        UsageChunk,
    )
    from ironhive.ports.chat import (
        ChatClient,
        ChatMessage,
        ChatOptions,
        ChatResponse,
        ChatUpdate,
        Role,
        ToolCallPart,
        ToolSpec,
        Usage,
    )
    from ironhive.ports.tools import Tool, ToolProvider

# Where each public name lives; imported on first access only (PEP 562), so ``import ironhive`` stays cheap.
_EXPORTS = {
    "IronHiveContainer": "ironhive.container",
    "AgentLoop": "ironhive.domain.agent_loop",
    "tool": "ironhive.adapters.tools.function_tool",
    "FunctionTool": "ironhive.adapters.tools.function_tool",
    "Tool": "ironhive.ports.tools",
    "ToolProvider": "ironhive.ports.tools",
    "ScriptedChatClient": "ironhive.adapters.scripted.client",
    "ScriptStep": "ironhive.adapters.scripted.client",
    "ScriptedToolCall": "ironhive.adapters.scripted.client",
    "ChatClient": "ironhive.ports.chat",
    "ChatMessage": "ironhive.ports.chat",
    "ChatOptions": "ironhive.ports.chat",
    "ChatResponse": "ironhive.ports.chat",
    "ChatUpdate": "ironhive.ports.chat",
    "Role": "ironhive.ports.chat",
    "ToolCallPart": "ironhive.ports.chat",
    "ToolSpec": "ironhive.ports.chat",
    "Usage": "ironhive.ports.chat",
    "AgentChunk": "ironhive.domain.turn",
    "AddendumChunk": "ironhive.domain.turn",
    "ContextCompactedChunk": "ironhive.domain.turn",
    "FallbackChunk": "ironhive.domain.turn",
    "TextDelta": "ironhive.domain.turn",
    "ThinkingDelta": "ironhive.domain.turn",
    "ToolCallChunk": "ironhive.domain.turn",
    "ToolCallRecord": "ironhive.domain.turn",
    "ToolResultChunk": "ironhive.domain.turn",
    "TurnCompleted": "ironhive.domain.turn",
    "TurnRecord": "ironhive.domain.turn",
    "UsageChunk": "ironhive.domain.turn",
    "IronHiveError": "ironhive.domain.errors",
    "ConfigurationError": "ironhive.domain.errors",
    "ProviderError": "ironhive.domain.errors",
    "ContextOverflowError": "ironhive.domain.errors",
    "ToolError": "ironhive.domain.errors",
    "ToolArgumentError": "ironhive.domain.errors",
    "ApprovalRejectedError": "ironhive.domain.errors",
    "TurnOptionsError": "ironhive.domain.errors",
    "SessionNotFoundError": "ironhive.domain.errors",
}

__all__ = [
    "AddendumChunk",
    "AgentChunk",
    "AgentLoop",
    "ApprovalRejectedError",
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatUpdate",
    "ConfigurationError",
    "ContextCompactedChunk",
    "ContextOverflowError",
    "FallbackChunk",
    "FunctionTool",
    "IronHiveContainer",
    "IronHiveError",
    "ProviderError",
    "Role",
    "ScriptStep",
    "ScriptedChatClient",
    "ScriptedToolCall",
    "SessionNotFoundError",
    "TextDelta",
    "ThinkingDelta",
    "Tool",
    "ToolArgumentError",
    "ToolCallChunk",
    "ToolCallPart",
    "ToolCallRecord",
    "ToolError",
    "ToolProvider",
    "ToolResultChunk",
    "ToolSpec",
    "TurnCompleted",
    "TurnOptionsError",
    "TurnRecord",
    "Usage",
    "UsageChunk",
    "__version__",
    "tool",
]


def __getattr__(name: str) -> object:
    # Lazy exports (PEP 562): importing any ironhive.* module must stay cheap.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ironhive' has no attribute {name!r}")
    value: object = getattr(__import__(module, fromlist=[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
