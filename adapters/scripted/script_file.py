"""Reads a scripted model's steps from a JSON or YAML file (for ``--provider scripted -m <file>``)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ironhive.adapters.scripted.client import (
    ScriptedChatClient,
    ScriptedToolCall,
    ScriptStep,
    SizedScriptedChatClient,
)
from ironhive.domain.errors import ConfigurationError, ProviderError
from ironhive.ports.chat import FinishReason, Usage


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ToolCall(_Strict):
    name: str
    arguments: dict[str, JsonValue] | str = Field(default_factory=dict)
    id: str | None = None


class _Usage(_Strict):
    input_tokens: int | None = None
    output_tokens: int | None = None


class _Error(_Strict):
    message: str
    status: int | None = None
    retryable: bool = False


class _Step(_Strict):
    text: str = ""
    deltas: list[str] = Field(default_factory=list)
    thinking: str = ""
    tool_calls: list[_ToolCall] = Field(default_factory=list)
    error: _Error | None = None
    usage: _Usage | None = None
    delay_seconds: float = 0.0
    finish_reason: FinishReason | None = None

    def to_step(self) -> ScriptStep:
        error = self.error
        return ScriptStep(
            text=self.text,
            deltas=tuple(self.deltas),
            thinking=self.thinking,
            tool_calls=tuple(
                ScriptedToolCall(name=call.name, arguments=call.arguments, call_id=call.id) for call in self.tool_calls
            ),
            error=None
            if error is None
            else ProviderError(error.message, status=error.status, retryable=error.retryable, provider="scripted"),
            usage=None if self.usage is None else Usage(**self.usage.model_dump()),
            delay_seconds=self.delay_seconds,
            finish_reason=self.finish_reason,
        )


class _Script(_Strict):
    steps: list[_Step]
    repeat_last: bool = False
    context_size: int | None = Field(default=None, gt=0)


def load_scripted_client(path: Path) -> ScriptedChatClient:
    """Build a ScriptedChatClient from a script file.

    The file holds ``{"steps": [...], "repeat_last": false, "context_size": null}`` or just the list of steps
    (``context_size`` makes the model state a context window); each step has any of
    ``text``, ``deltas``, ``thinking``, ``tool_calls`` (``[{"name", "arguments", "id"}]``), ``usage``
    (``{"input_tokens", "output_tokens"}``), ``error`` (``{"message", "status", "retryable"}``), ``delay_seconds``,
    ``finish_reason``.

    Args:
        path: A ``.json``, ``.yaml`` or ``.yml`` file.

    Returns:
        The client.

    Raises:
        ConfigurationError: The file is missing or not a valid script.
    """
    try:
        raw_text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigurationError(f"Cannot read the model script {path}: {error.strerror or error}") from error
    try:
        data = yaml.safe_load(raw_text) if path.suffix.lower() in {".yaml", ".yml"} else json.loads(raw_text)
        script = _Script.model_validate({"steps": data} if isinstance(data, list) else data)
    except (ValueError, yaml.YAMLError, ValidationError) as error:
        raise ConfigurationError(f"The model script {path} is not valid: {error}") from error
    steps = [step.to_step() for step in script.steps]
    if script.context_size is not None:
        return SizedScriptedChatClient(
            steps, repeat_last=script.repeat_last, model=path.stem, context_size=script.context_size
        )
    return ScriptedChatClient(steps, repeat_last=script.repeat_last, model=path.stem)
