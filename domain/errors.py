"""The one error tree of ironhive, rooted at IronHiveError.

IronHiveError
├── ConfigurationError      settings are missing or wrong (exit code 1 on the CLI)
├── ProviderError           a model provider failed (``status``, ``retryable``)
│   ├── ContextOverflowError    the request did not fit the model's context window
│   └── LocalModelCrashedError  the local model's native code (llama.cpp) crashed its worker process
├── ToolError               a tool ran and failed; the message goes to the model
│   └── ToolArgumentError       the arguments do not fit the tool's parameters
├── ApprovalRejectedError   a human rejected a call and asked to stop the request
├── TurnOptionsError        a turn's options name an unknown tool, mode or effort
└── SessionNotFoundError    no session has the given id

Messages never contain API keys or request bodies.
"""

from __future__ import annotations


class IronHiveError(Exception):
    """Root of every error ironhive raises on purpose."""


class ConfigurationError(IronHiveError):
    """Configuration is missing, malformed or contradictory."""


class ProviderError(IronHiveError):
    """A model provider failed or refused a request.

    Attributes:
        status: The HTTP status, when there was one.
        retryable: Whether the same request may succeed later (rate limits, overload, network).
        provider: The provider's name, when known.
        retry_after: Seconds the provider asked to wait before a retry (``Retry-After``), when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        provider: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.provider = provider
        self.retry_after = retry_after


class ContextOverflowError(ProviderError):
    """The request was larger than the model's context window.

    Attributes:
        window: The window the provider stated, when it stated one.
    """

    def __init__(self, message: str, *, window: int | None = None, provider: str | None = None) -> None:
        super().__init__(message, status=400, retryable=False, provider=provider)
        self.window = window


class LocalModelCrashedError(ProviderError):
    """The child process running llama.cpp died (killed by a signal or exited) instead of answering.

    The message names the cause and the setting that avoids it; the next call starts a fresh worker.

    Attributes:
        signal_name: The signal that ended the worker (``SIGSEGV``, ``SIGILL``, ...), when it was a signal.
        exit_code: The worker's exit status (negative for a signal), when known.
    """

    def __init__(
        self, message: str, *, signal_name: str | None = None, exit_code: int | None = None, provider: str | None = None
    ) -> None:
        super().__init__(message, retryable=False, provider=provider)
        self.signal_name = signal_name
        self.exit_code = exit_code


class ToolError(IronHiveError):
    """A tool ran and failed. The message is what the model reads."""


class ToolArgumentError(ToolError):
    """The arguments of a call do not fit the tool's parameters.

    Attributes:
        parameter: The parameter that is missing or wrong, when one is known.
    """

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class ApprovalRejectedError(IronHiveError):
    """A human rejected a call and asked to stop the whole request."""


class TurnOptionsError(IronHiveError):
    """A turn's options name a tool that is not registered, or an unknown tool mode or reasoning effort."""


class SessionNotFoundError(IronHiveError):
    """No session has the given id."""
