"""Doctor's local-inference check: llama-cpp-python is installed, the GGUF model is there, and it loads and answers.

The model runs as a run would run it: a LlamaCppChatClient, so llama.cpp's native code runs in a child worker process
and a native crash there is a failed check naming the fix, not a crashed ``doctor``. A watchdog bounds the check.
"""

from __future__ import annotations

import importlib.util
import math
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ironhive.adapters.config.schema import LMSupplySection
from ironhive.adapters.diagnostics.report import CONNECTIVITY, Check, CheckStatus, human_size
from ironhive.domain.errors import ConfigurationError, IronHiveError, LocalModelCrashedError

NAME = "lmsupply (local)"
BUFFERS_NAME = "llama.cpp extra buffer types"
LOAD_SECONDS: Final = 60.0
"""How long loading the model and generating a few tokens may take before the check fails."""
PROMPT: Final = "Say OK."
MAX_TOKENS: Final = 4
_INSTALL = 'Install local inference: pip install "ironhive[local]"'
# After the watchdog should have ended the worker: how much longer the check waits before giving up on the call.
_GRACE_SECONDS: Final = 10.0


def local_model_check(
    section: LMSupplySection,
    *,
    home: Path,
    environ: Mapping[str, str],
    verbose: bool,
    load: bool = True,
    timeout: float = LOAD_SECONDS,
) -> list[Check]:
    """Whether local inference can run: the runtime is installed, the model file present, and the model answers.

    With ``load`` the model is loaded and asked for a few tokens in a child process, within ``timeout`` seconds; a
    crash, an error or the timeout is a failed check. ``verbose`` adds the file's path and size, the time taken and a
    check saying whether llama.cpp's extra buffer types were on, and why (the CPU probe or the setting).

    Args:
        section: The ``lmsupply`` settings.
        home: The user's home directory (downloaded models are cached under it).
        environ: The environment (``HF_HUB_OFFLINE`` forbids downloads).
        verbose: Show the model file's path and size, the time taken and the extra buffer types decision.
        load: Load the model and generate (``False``: only look for the file).
        timeout: Seconds allowed for loading and generating.

    Returns:
        The checks: the local model's, then (verbose, once the model loaded) the extra buffer types decision.
    """
    found = _model_file(section, home=home, environ=environ, verbose=verbose)
    if isinstance(found, Check):
        return [found]
    if not load:
        return [_present(found, verbose)]
    return inference_checks(found, section, verbose=verbose, timeout=timeout)


def _model_file(section: LMSupplySection, *, home: Path, environ: Mapping[str, str], verbose: bool) -> Check | Path:
    """The model file to load, or the check that ends the inquiry (nothing to load, or not downloaded yet)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return _check("error", "llama-cpp-python is not installed", _INSTALL)
    from ironhive.adapters.llamacpp.model_files import bundled_model_path
    from ironhive.adapters.llamacpp.model_resolution import cached_model_path, default_model_cache, offline

    if section.model_path:
        path = Path(section.model_path).expanduser()
        if not path.is_file():
            return _check(
                "error",
                f"Model file not found: {path} (lmsupply.modelPath)",
                "Point lmsupply.modelPath at a GGUF file, or unset it to use the bundled model.",
            )
        return path
    if section.hugging_face_repo or section.hugging_face_file:
        repo, file = section.hugging_face_repo, section.hugging_face_file
        if not (repo and file):
            return _check(
                "error",
                "A Hugging Face model needs both lmsupply.huggingFaceRepo and lmsupply.huggingFaceFile",
                "Set the missing key, or unset both to use the bundled model.",
            )
        try:
            cached = cached_model_path(repo, file, legacy_dir=default_model_cache(home))
        except ConfigurationError as error:
            return _check("error", str(error), "Correct lmsupply.huggingFaceRepo / lmsupply.huggingFaceFile.")
        if cached is not None:
            return cached
        if offline(environ):
            return _check(
                "error",
                f"{repo}/{file} is not downloaded and HF_HUB_OFFLINE forbids downloading it",
                "Run once without HF_HUB_OFFLINE, or set lmsupply.modelPath to a local GGUF file.",
            )
        where = " into the Hugging Face cache" if verbose else ""
        return _check("pass", f"{repo}/{file} is not downloaded yet; the first run downloads it{where}")
    try:
        bundled = bundled_model_path()
    except ConfigurationError as error:
        return _check("error", str(error), _INSTALL)
    return bundled


def inference_checks(
    path: Path, section: LMSupplySection, *, verbose: bool, timeout: float = LOAD_SECONDS
) -> list[Check]:
    """Load ``path`` with the ``lmsupply`` settings in a child process and generate a few tokens, within ``timeout``.

    Args:
        path: The GGUF file.
        section: The ``lmsupply`` settings (context length, extra buffer types).
        verbose: Show the path, size and time taken, and add the extra buffer types decision.
        timeout: Seconds allowed.

    Returns:
        The model's check, then (verbose, once loaded) the extra buffer types decision.
    """
    from ironhive.adapters.llamacpp.crash import SET_COMMAND, SETTING

    outcome = _run_model(path, section, timeout=timeout)
    error = outcome.error
    if outcome.timed_out:
        return [
            _check(
                "error",
                f"The local model {path.name} did not load and answer within {timeout:g} s",
                f"A large model on a slow disk may need longer (try `ironhive -p hi --provider local`); if llama.cpp "
                f"hangs, set {SETTING} ({SET_COMMAND}) or choose a smaller model (lmsupply.modelPath).",
            )
        ]
    if isinstance(error, LocalModelCrashedError):
        if section.extra_buffer_types is False:
            hint = "Try another model file (lmsupply.modelPath) or another build of llama-cpp-python."
        else:
            hint = f"Set {SETTING} in config.yaml (run: {SET_COMMAND}), then run ironhive doctor again."
        return [_check("error", str(error), hint)]
    if error is not None:
        hint = 'Point lmsupply.modelPath at a GGUF file llama.cpp can load, or reinstall: pip install "ironhive[local]"'
        if not isinstance(error, IronHiveError):
            return [_check("error", f"Local inference failed: {type(error).__name__}: {error}", hint)]
        return [_check("error", str(error), hint)]
    if verbose:
        tokens = f"generated {outcome.output_tokens} tokens" if outcome.output_tokens is not None else "answered"
        size = human_size(path.stat().st_size)
        checks = [_check("pass", f"Model {path} ({size}) loaded and {tokens} in {outcome.seconds:.1f} s")]
        return checks + _buffer_decision(outcome.load_parameters)
    return [_check("pass", f"Model {path.name} loaded and answered")]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Outcome:
    """What became of the test generation."""

    seconds: float
    timed_out: bool = False
    error: Exception | None = None
    output_tokens: int | None = None
    load_parameters: Mapping[str, object] | None = None


def _run_model(path: Path, section: LMSupplySection, *, timeout: float) -> _Outcome:
    """Ask the model for a few tokens through the client a run uses, from a thread this call waits for."""
    from ironhive.adapters.llamacpp.client import LlamaCppChatClient
    from ironhive.ports.chat import ChatMessage, ChatOptions, Role

    started = time.monotonic()
    try:
        client = LlamaCppChatClient(
            model_path=path,
            n_ctx=section.max_context_length,
            extra_buffer_types=section.extra_buffer_types,
            prefix_cache_max_bytes=0,  # doctor leaves no files behind
            worker_command=watchdog_command(timeout),
        )
    except ConfigurationError as error:
        return _Outcome(seconds=0.0, error=error)
    messages = (ChatMessage.of_text(Role.USER, PROMPT),)
    options = ChatOptions(temperature=0.0, max_output_tokens=MAX_TOKENS)
    results: list[int | Exception | None] = []

    def generate() -> None:
        import asyncio

        try:
            response = asyncio.run(client.get_response(messages, options))
        except Exception as error:  # handed over to the waiting thread
            results.append(error)
        else:
            results.append(response.usage.output_tokens if response.usage is not None else None)

    thread = threading.Thread(target=generate, name="doctor-local-model", daemon=True)
    thread.start()
    thread.join(timeout + _GRACE_SECONDS)
    seconds = time.monotonic() - started
    if thread.is_alive():
        # No watchdog on this system (or it failed): the call is left behind, and the client's finalizer ends the
        # worker when doctor exits. Closing it here would wait for the stuck call.
        return _Outcome(seconds=seconds, timed_out=True)
    try:
        parameters = client.load_parameters
    finally:
        client.close()
    (result,) = results
    if isinstance(result, LocalModelCrashedError) and result.signal_name == "SIGALRM":
        return _Outcome(seconds=seconds, timed_out=True)
    if isinstance(result, Exception):
        return _Outcome(seconds=seconds, error=result)
    return _Outcome(seconds=seconds, output_tokens=result, load_parameters=parameters)


def watchdog_command(seconds: float) -> tuple[str, ...] | None:
    """The worker's command line, ended by SIGALRM after ``seconds``; ``None`` where there is no ``alarm`` (Windows).

    The alarm is set in a small launcher that then execs the worker: a pending alarm survives ``exec``, so the worker
    itself is ended, even when it is stuck in native code.
    """
    if not hasattr(signal, "alarm"):
        return None
    from ironhive.adapters.llamacpp.worker_process import DEFAULT_COMMAND

    command = list(DEFAULT_COMMAND)
    code = (
        "import os, signal; signal.signal(signal.SIGALRM, signal.SIG_DFL); "
        f"signal.alarm({max(1, math.ceil(seconds))}); os.execv({command[0]!r}, {command!r})"
    )
    return (command[0], "-P", "-c", code)


def _buffer_decision(parameters: Mapping[str, object] | None) -> list[Check]:
    """The extra buffer types llama.cpp loaded the model with (read back from its model parameters), and why."""
    if not parameters or "use_extra_bufts" not in parameters:
        return []
    state = "On" if parameters["use_extra_bufts"] else "Off"
    if parameters.get("extra_buffer_source") == "config":
        message = f"{state}: set by lmsupply.extraBufferTypes"
    else:
        message = f"{state}, decided by the CPU probe: {parameters.get('extra_buffer_reason')}"
    return [_check("pass", message, name=BUFFERS_NAME)]


def _present(path: Path, verbose: bool) -> Check:
    if verbose:
        return _check("pass", f"Model file present: {path} ({human_size(path.stat().st_size)})")
    return _check("pass", f"Model file present: {path.name}")


def _check(status: CheckStatus, message: str, hint: str | None = None, *, name: str = NAME) -> Check:
    return Check(category=CONNECTIVITY, name=name, status=status, message=message, hint=hint)
