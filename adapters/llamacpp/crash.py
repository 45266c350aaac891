"""The error for a dead llama.cpp worker process: what happened, the likely cause, and the setting that avoids it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ironhive.adapters.llamacpp.worker_process import signal_description, signal_name
from ironhive.domain.errors import LocalModelCrashedError

SETTING: Final = "lmsupply.extraBufferTypes: false"
"""The config.yaml setting that loads the model without llama.cpp's extra buffer types (AMX, repacked weights)."""
SET_COMMAND: Final = "ironhive set lmsupply.extraBufferTypes false"


def crash_error(
    status: int | None,
    *,
    stage: str,
    extra_buffer_types_used: bool | None,
    stderr_tail: Sequence[str] = (),
    provider: str | None = None,
) -> LocalModelCrashedError:
    """Describe the death of a worker.

    Args:
        status: Its exit status (negative: the signal that killed it); ``None`` if it did not exit in time.
        stage: What it was doing (``loading the model``, ``generating a reply``).
        extra_buffer_types_used: Whether it ran with llama.cpp's extra buffer types, when known.
        stderr_tail: Its last stderr lines (the last Python error line is quoted for a plain exit).
        provider: The provider name for the error.

    Returns:
        The error, its message naming the cause and the setting that avoids it.
    """
    name = signal_name(status) if status is not None else None
    if name is not None:
        cause = (
            f"The local model crashed: llama.cpp's native code killed its worker process with {name} "
            f"({signal_description(name)}) while {stage}. This usually means llama.cpp ran CPU instructions this "
            "machine does not support (for example AMX or AVX-512 that a virtual machine advertises but does not "
            "provide)."
        )
    elif status is None:
        cause = f"The local model's worker process stopped answering while {stage}."
    else:
        last = _last_error_line(stderr_tail)
        cause = f"The local model's worker process exited with status {status} while {stage}" + (
            f": {last}" if last else "."
        )
    if extra_buffer_types_used is False:
        fix = (
            f"llama.cpp's extra buffer types were already off ({SETTING}); try another model file "
            "(lmsupply.modelPath) or another build of llama-cpp-python."
        )
    else:
        fix = (
            f"To load the model without llama.cpp's extra buffer types (AMX, repacked weights), set {SETTING} in "
            f"config.yaml (or run: {SET_COMMAND}) and try again."
        )
    return LocalModelCrashedError(f"{cause} {fix}", signal_name=name, exit_code=status, provider=provider)


def _last_error_line(tail: Sequence[str]) -> str:
    for line in reversed(tail):
        stripped = line.strip()
        if stripped and not stripped.startswith(("File ", "^", "~")):
            return stripped[:300]
    return ""
