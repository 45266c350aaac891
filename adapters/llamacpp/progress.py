"""What the local model reports while it works: progress of loading and prefill, and the figures of the last run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

ProgressStage: TypeAlias = Literal["loading", "prefill"]


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalProgress:
    """One progress report of the local model.

    Attributes:
        stage: ``loading`` (the model file is being loaded; ``done``/``total`` are per cent, ``total`` is 100) or
            ``prefill`` (the prompt is being evaluated; ``done``/``total`` count the prompt tokens evaluated in this
            call, leaving out those reused from memory or from the prefix cache).
        done: Units done so far.
        total: Units in all.
    """

    stage: ProgressStage
    done: int
    total: int


ProgressCallback: TypeAlias = Callable[[LocalProgress], None]
"""Receives progress reports; called from the client's I/O thread, so it must be quick and thread-safe."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalRunStats:
    """How the last generation used the prompt.

    Attributes:
        prompt_tokens: Tokens of the whole prompt, after the chat template.
        evaluated_tokens: Prompt tokens llama.cpp evaluated in this call (prefill work actually done).
        reused_tokens: Prompt tokens whose evaluated state was already in memory (an earlier call of this worker).
        restored_tokens: Prompt tokens whose evaluated state was loaded from the on-disk prefix cache.
        context_tokens: Tokens in llama.cpp's context when the call ended (prompt plus evaluated reply tokens).
        prefill_seconds: Seconds spent evaluating the prompt (restoring included).
        resampled_tokens: Reply tokens the grammar rejected at first, sampled again with the grammar applied.
    """

    prompt_tokens: int
    evaluated_tokens: int
    reused_tokens: int
    restored_tokens: int
    context_tokens: int
    prefill_seconds: float
    resampled_tokens: int = 0
