"""LlamaCppChatClient: GGUF inference with llama.cpp, run in a child worker process, as a ChatClient."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from ironhive.adapters.llamacpp import early_start
from ironhive.adapters.llamacpp.context_length import UNKNOWN_TRAINED_CONTEXT, auto_context_length, total_ram_bytes
from ironhive.adapters.llamacpp.crash import crash_error
from ironhive.adapters.llamacpp.mapping import (
    CompletionSettings,
    LlamaMessage,
    completion_settings,
    finish_reason_of,
    to_llama_messages,
)
from ironhive.adapters.llamacpp.model_files import bundled_model_path, gguf_trained_context
from ironhive.adapters.llamacpp.prefix_cache import DEFAULT_MAX_BYTES, default_cache_dir
from ironhive.adapters.llamacpp.progress import LocalProgress, LocalRunStats, ProgressCallback
from ironhive.adapters.llamacpp.tool_calling import (
    plan_tools,
    response_grammar,
    tool_instructions,
    with_tool_instructions,
)
from ironhive.adapters.llamacpp.tool_output import ReplyDecoder
from ironhive.adapters.llamacpp.worker_process import WorkerHandle, WorkerProcess
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.domain.tool_calls import new_call_id
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContentPart,
    FinishReason,
    Role,
    TextPart,
    ToolCallPart,
    Usage,
)

if TYPE_CHECKING:
    from ironhive.adapters.llamacpp.resident import ResidentPlace

PROVIDER: Final = "local"
SMALL_MODEL_BYTES: Final = 1 << 30
"""A GGUF file under this size holds a small model (about two billion parameters at 4 bits or fewer)."""
"""The provider name carried by the errors this client raises."""

_INSTALL_HINT = 'install it with: pip install "ironhive[local]"'
_log = logging.getLogger(__name__)


class _End:
    """Marks the end of a worker's output on the queue."""


_END: Final = _End()

# llama.cpp rounds the context up to a multiple of this, while llama-cpp-python sizes its token buffer by the size it
# was given: a prompt between the two sizes then crashes inside llama-cpp-python instead of overflowing cleanly.
_CONTEXT_STEP: Final = 256

_Emit: TypeAlias = Callable[[ChatUpdate | _End], bool]
_Frame: TypeAlias = dict[str, Any]


class LlamaCppChatClient:
    """A chat client running a GGUF model with llama.cpp (through llama-cpp-python) in a child worker process.

    llama.cpp's native code runs in that worker (:mod:`ironhive.adapters.llamacpp.worker`), never in this process, so
    a native crash (an instruction the CPU does not support, say) ends the worker only and the call raises
    :class:`~ironhive.domain.errors.LocalModelCrashedError` naming the cause and the setting that avoids it; the next
    call starts a fresh worker. The worker starts and loads the model on the first call (or earlier, with
    :meth:`start_early`) and stays until :meth:`close`. Calls take turns (one llama.cpp context serves one call at a
    time), and a generation stops at the next token once the caller stops reading a stream or is cancelled.

    Before loading, the worker decides llama.cpp's extra buffer types (AMX, repacked weights) by probing the CPU
    (:mod:`ironhive.adapters.llamacpp.cpu_probe`) unless ``extra_buffer_types`` says otherwise. The evaluated state
    of the prompt is kept in memory between calls and on disk between runs
    (:mod:`ironhive.adapters.llamacpp.prefix_cache`), so a prompt that starts like an earlier one (the same system
    prompt and tools, a session's history) evaluates only what is new. Generation ends at ``max_output_tokens``
    (512 when unset, finish reason ``length``) or when the reply starts repeating itself (finish reason
    ``repetition``).

    Tools: when ``options.tools`` offers any (and ``tool_mode`` is not ``none``), the system prompt names them and the
    reply is held by a llama.cpp grammar to one JSON object, a tool call or an answer (see
    :mod:`ironhive.adapters.llamacpp.tool_calling`), applied only to the tokens it rejects
    (:mod:`ironhive.adapters.llamacpp.sampling`); the reply ends at the object's closing brace. A call comes back as
    a ``ToolCallPart`` with the arguments the model wrote, even when they do not fit the tool's schema (the agent loop
    answers those with a recovery directive). An answer's text streams as it is generated, unescaped from the JSON
    string. Without tools the model answers in free text, streamed.

    Args:
        model_path: The GGUF file to run; ``None`` runs the bundled SmolLM2-135M-Instruct model.
        n_ctx: The context window to allocate, in tokens (``maxContextLength``); ``None`` sizes it by the machine's
            RAM (:func:`~ironhive.adapters.llamacpp.context_length.auto_context_length`), capped at 8192 for a model
            that does not state its trained context. Either way it is capped by the model's trained context and
            rounded up to a multiple of 256 as llama.cpp does.
        n_threads: CPU threads for generation; ``None`` chooses half of the CPUs this process may use (prompt
            evaluation uses one thread per usable physical core either way: see
            :mod:`~ironhive.adapters.llamacpp.cpu_settings`).
        seed: Sampling seed applied to every call (reproducible output); ``None`` lets llama.cpp choose.
        id_factory: Makes the ids of tool calls (random ``call_...`` ids when omitted).
        extra_buffer_types: ``lmsupply.extraBufferTypes``: ``True``/``False`` force llama.cpp's extra buffer types
            on or off; ``None`` (the default) decides by the CPU probe.
        on_progress: Receives :class:`~ironhive.adapters.llamacpp.progress.LocalProgress` reports while the model
            loads and the prompt is evaluated; called from the client's I/O thread.
        prefix_cache_dir: The folder of the on-disk prefix cache; ``None`` uses ``~/.ironhive/cache/llamacpp-prefix``
            (under ``HOME``).
        prefix_cache_max_bytes: The bound of the on-disk prefix cache (512 MiB by default); ``0`` turns it off.
        compact_tools: Offer tools the small-model way (fewer built-in tools, short descriptions: see
            :func:`~ironhive.adapters.llamacpp.tool_calling.tool_instructions`); ``None`` decides by the model file's
            size (under 1 GiB, about two billion parameters at 4 bits, counts as small — the bundled model is 0.1 GB).
        worker_command: The worker's command line (tests); the worker module under this interpreter when omitted.

    Raises:
        ConfigurationError: The model file does not exist, the bundled model is not installed, or a setting is out of
            range.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        seed: int | None = None,
        id_factory: Callable[[], str] | None = None,
        extra_buffer_types: bool | None = None,
        on_progress: ProgressCallback | None = None,
        prefix_cache_dir: Path | None = None,
        prefix_cache_max_bytes: int = DEFAULT_MAX_BYTES,
        compact_tools: bool | None = None,
        worker_command: Sequence[str] | None = None,
    ) -> None:
        if n_ctx is not None and n_ctx < 1:
            raise ConfigurationError(f"n_ctx must be at least 1, got {n_ctx}")
        if n_threads is not None and n_threads < 1:
            raise ConfigurationError(f"n_threads must be at least 1, got {n_threads}")
        if prefix_cache_max_bytes < 0:
            raise ConfigurationError(f"prefix_cache_max_bytes must not be negative, got {prefix_cache_max_bytes}")
        if model_path is None:
            path = bundled_model_path()
        else:
            path = Path(model_path).expanduser()
            if not path.is_file():
                raise ConfigurationError(f"The local model file {path} does not exist")
        self._model_path = path
        self._compact_tools = path.stat().st_size < SMALL_MODEL_BYTES if compact_tools is None else compact_tools
        trained = gguf_trained_context(path)
        if n_ctx is None:
            n_ctx = min(auto_context_length(total_ram_bytes()), trained or UNKNOWN_TRAINED_CONTEXT)
        self._n_ctx = _usable_context(n_ctx, trained)
        self._n_threads = n_threads
        self._seed = seed
        self._id_factory = id_factory or new_call_id
        self._extra_buffer_types = extra_buffer_types
        self._on_progress = on_progress
        self._prefix_cache_dir = prefix_cache_dir
        self._prefix_cache_max_bytes = prefix_cache_max_bytes
        self._worker_command = tuple(worker_command) if worker_command is not None else None
        # Guards starting, generating and closing alike: one llama.cpp context serves one call at a time.
        self._lock = threading.Lock()
        self._worker: WorkerHandle | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._active_lock = threading.Lock()
        # The running request: its worker, its id and the stop event of the call that sent it.
        self._active: tuple[WorkerHandle, int, threading.Event] | None = None
        self._load_parameters: dict[str, Any] | None = None
        self._decision: object = None  # the last worker's use_extra_bufts, as it announced before loading
        self._last_run: LocalRunStats | None = None

    @property
    def model_name(self) -> str:
        """The model's name: the GGUF file's stem."""
        return self._model_path.stem

    @property
    def model_path(self) -> Path:
        """The GGUF file this client runs."""
        return self._model_path

    @property
    def context_size(self) -> int:
        """The context window in tokens: ``n_ctx`` capped by the model's trained context, on llama.cpp's 256 step."""
        return self._n_ctx

    @property
    def load_parameters(self) -> dict[str, Any] | None:
        """The parameters the worker loaded the model with (``use_extra_bufts`` as passed to llama.cpp, its source
        and reason, threads, batch, the prefix cache folder), once loaded."""
        return dict(self._load_parameters) if self._load_parameters is not None else None

    @property
    def last_run(self) -> LocalRunStats | None:
        """How the last generation used its prompt (tokens evaluated, reused from memory, restored from disk)."""
        return self._last_run

    def start_early(self, resident: ResidentPlace | None = None) -> None:
        """Start a worker and its model load now, without waiting, for the first call of a client with these settings.

        The worker is handed to :mod:`~ironhive.adapters.llamacpp.early_start`: the first client in this process that
        needs a worker with the same load settings (this one, or one built later with the same arguments) takes it
        over and reads its load reply, so the model loads while the caller goes on with its own start-up. A worker
        nobody takes is ended when the process exits. Does nothing for a client with a custom ``worker_command``.

        Args:
            resident: Where this user's resident workers live (:mod:`~ironhive.adapters.llamacpp.resident`): the
                worker is then the resident for these settings, which keeps the model and the evaluated prompt
                between runs; ``None`` starts a child worker.
        """
        if self._worker_command is None:
            early_start.start(self._load_settings(), resident)

    async def warm_up(self) -> None:
        """Start the worker and load the model now, off the event loop (the ``Preloadable`` port)."""

        def load() -> None:
            with self._lock:
                self._ready()

        await asyncio.to_thread(load)

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer (loads the model on first use)."""
        with self._lock:
            worker = self._ready()
            reply = self._request(worker, {"op": "tokenize", "text": text}, stage="counting tokens")
            return int(reply["count"])

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer ``messages`` in one piece.

        Args:
            messages: The conversation so far, oldest first.
            options: Settings of this call (``temperature``, ``max_output_tokens``, ``tools`` and ``tool_mode`` are
                honoured).

        Returns:
            The assistant's text or tool call, with usage and finish reason (``tool_calls`` after a call,
            ``length`` at the output cap, ``repetition`` when the reply was stopped for repeating itself).

        Raises:
            ConfigurationError: llama-cpp-python is not installed, the model file cannot be loaded, or the tool mode
                is unknown or requires a tool that is not offered.
            ContextOverflowError: The prompt does not fit the context window.
            LocalModelCrashedError: llama.cpp crashed its worker process (the message names the cause and the fix).
            ProviderError: llama.cpp failed.
        """
        texts: list[str] = []
        calls: list[ToolCallPart] = []
        usage: Usage | None = None
        finish_reason: FinishReason | None = None
        async with contextlib.aclosing(self._stream(messages, options)) as updates:
            async for update in updates:
                texts.append(update.text_delta)
                calls.extend(update.tool_calls)
                usage = update.usage or usage
                finish_reason = update.finish_reason or finish_reason
        text = "".join(texts)
        parts: tuple[ContentPart, ...] = (TextPart(text=text),) if text or not calls else ()
        message = ChatMessage(role=Role.ASSISTANT, parts=(*parts, *calls))
        return ChatResponse(message=message, usage=usage, finish_reason=finish_reason)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        """Answer ``messages`` as a stream of text deltas, ending with one update that carries usage and finish reason.

        With tools, that last update also carries the tool call, if the model made one; a reply that is neither a call
        nor an answer (cut off by the token limit) arrives as one text delta just before it.

        Stopping early (leaving the loop, closing the iterator or cancelling the reading task) stops generation at
        the next token; closing the iterator returns once the worker has stopped.

        Args:
            messages: The conversation so far, oldest first.
            options: Settings of this call (``temperature``, ``max_output_tokens``, ``tools`` and ``tool_mode`` are
                honoured).

        Returns:
            An async iterator of updates.

        Raises:
            ConfigurationError: llama-cpp-python is not installed, the model file cannot be loaded, or the tool mode
                is unknown or requires a tool that is not offered.
            ContextOverflowError: The prompt does not fit the context window.
            LocalModelCrashedError: llama.cpp crashed its worker process (the message names the cause and the fix).
            ProviderError: llama.cpp failed.
        """
        return self._stream(messages, options)

    def close(self) -> None:
        """Stop the worker and release the model. A later call starts a new one.

        Blocks until a running generation has finished (and the worker has written the prefix cache), so call it when
        no call is in flight.
        """
        with self._lock:
            worker, self._worker = self._worker, None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
            if worker is not None:
                worker.close()

    async def _stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncGenerator[ChatUpdate, None]:
        plan = plan_tools(options)
        if plan is not None and self._compact_tools:
            plan = plan.for_small_model()
        llama_messages = to_llama_messages(messages, json_turns=plan is not None)
        if plan is not None:
            instructions = tool_instructions(plan, compact=self._compact_tools)
            llama_messages = with_tool_instructions(llama_messages, instructions)
        settings = completion_settings(options, seed=self._seed)
        grammar = response_grammar(plan) if plan is not None else None
        decoder = ReplyDecoder(plan, self._id_factory) if plan is not None else None
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChatUpdate | _End] = asyncio.Queue()
        stop = threading.Event()

        def emit(item: ChatUpdate | _End) -> bool:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody reads any more
                self._stop_generation(stop)
                return False
            return True

        worker = asyncio.create_task(asyncio.to_thread(self._generate, llama_messages, settings, grammar, emit, stop))
        try:
            while not isinstance(item := await queue.get(), _End):
                if decoder is None:
                    yield item
                    continue
                for update in _decoded(item, decoder):
                    yield update
            await worker
        finally:
            self._stop_generation(stop)
            await _join(worker)

    def _stop_generation(self, stop: threading.Event) -> None:
        """Ask the running generation to stop at its next token (the reader has gone)."""
        stop.set()
        with self._active_lock:
            active = self._active
        # Only this call's own request: the running one may already belong to the next call.
        if active is not None and active[2] is stop:
            worker, request_id, _ = active
            worker.send({"op": "stop", "id": request_id})

    def _generate(
        self,
        messages: list[LlamaMessage],
        settings: CompletionSettings,
        grammar: str | None,
        emit: _Emit,
        stop: threading.Event,
    ) -> None:
        """Run one generation in the worker, from an I/O thread, handing updates to ``emit`` until done or stopped."""
        try:
            with self._lock:
                if stop.is_set():
                    return
                worker = self._ready()
                request_id = worker.next_id()
                with self._active_lock:
                    self._active = (worker, request_id, stop)
                try:
                    request: _Frame = {
                        "op": "generate",
                        "id": request_id,
                        "messages": messages,
                        "completion": settings.as_kwargs(),
                        "grammar": grammar,
                    }

                    def on_delta(text: str) -> None:
                        if not emit(ChatUpdate(text_delta=text)):
                            self._stop_generation(stop)

                    def after_send() -> None:
                        if stop.is_set():  # the reader left before the request was sent: its stop went nowhere
                            worker.send({"op": "stop", "id": request_id})

                    reply = self._request(
                        worker, request, stage="generating a reply", on_delta=on_delta, after_send=after_send
                    )
                finally:
                    with self._active_lock:
                        self._active = None
                stats = reply.get("stats")
                if isinstance(stats, dict):
                    self._last_run = run = LocalRunStats(**stats)
                    _log.info(
                        "local prompt: %d tokens, %d evaluated, %d reused from memory, %d restored from disk, "
                        "prefill %.3f s",
                        run.prompt_tokens,
                        run.evaluated_tokens,
                        run.reused_tokens,
                        run.restored_tokens,
                        run.prefill_seconds,
                    )
                if reply.get("stopped"):
                    return
                finish_reason = finish_reason_of(reply.get("finish_reason"))
                if reply.get("finish_reason") == "repetition":
                    finish_reason = "repetition"
                    _log.info("local generation stopped: %s", reply.get("repetition"))
                usage = Usage(input_tokens=reply.get("input_tokens"), output_tokens=reply.get("output_tokens"))
                emit(ChatUpdate(usage=usage, finish_reason=finish_reason))
        finally:
            emit(_END)

    # --- the worker ----------------------------------------------------------------------------------------------

    def _ready(self) -> WorkerHandle:
        """The running worker with the model loaded, starting one first if needed; the caller holds ``self._lock``."""
        worker = self._worker
        if worker is not None and worker.alive:
            return worker
        if worker is not None:
            worker.close()
        settings = self._load_settings()
        early = early_start.claim(settings) if self._worker_command is None else None
        worker = early.worker if early is not None else WorkerProcess(self._worker_command)
        self._decision = None
        self._worker = worker
        self._finalizer = weakref.finalize(self, worker.close)
        request: _Frame = {"op": "load", "settings": settings}
        try:
            if early is not None:  # its load request is on its way already
                _log.info("local model: took over worker %d, started early", worker.pid)
                reply = self._request(worker, {**request, "id": early.request_id}, stage="loading the model", sent=True)
            else:
                reply = self._request(worker, request, stage="loading the model")
        except BaseException:
            self._discard(worker)
            raise
        params = reply.get("params")
        self._load_parameters = dict(params) if isinstance(params, dict) else {}
        return worker

    def _load_settings(self) -> _Frame:
        """The worker's ``load`` settings (compared as a whole when taking over a worker started early)."""
        return {
            "model_path": str(self._model_path),
            "n_ctx": self._n_ctx,
            "n_threads": self._n_threads,
            "seed": self._seed,
            "extra_buffer_types": self._extra_buffer_types,
            "prefix_cache_dir": str(self._prefix_cache_dir or default_cache_dir(Path.home())),
            "prefix_cache_max_bytes": self._prefix_cache_max_bytes,
        }

    def _discard(self, worker: WorkerHandle) -> None:
        if self._worker is worker:
            self._worker = None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
        worker.close(timeout=2.0)

    def _request(
        self,
        worker: WorkerHandle,
        request: _Frame,
        *,
        stage: str,
        on_delta: Callable[[str], None] | None = None,
        after_send: Callable[[], None] | None = None,
        sent: bool = False,
    ) -> _Frame:
        """Send ``request`` (unless it was ``sent`` already) and read frames until its answer; progress and deltas go
        to their callbacks."""
        request_id = request.get("id")
        if not isinstance(request_id, int):
            request_id = worker.next_id()
        if not sent and not worker.send({**request, "id": request_id}):
            raise self._crashed(worker, stage)
        if after_send is not None:
            after_send()
        while True:
            frame = worker.receive()
            if frame is None:
                raise self._crashed(worker, stage)
            if frame.get("id") != request_id and frame.get("type") not in ("progress", "decision"):
                continue  # the tail of an earlier request that was abandoned
            match frame.get("type"):
                case "progress":
                    self._progress(frame)
                case "decision":
                    self._decision = frame.get("use_extra_bufts")
                case "delta":
                    if on_delta is not None:
                        on_delta(str(frame.get("text", "")))
                case "error":
                    raise self._error(frame)
                case _:
                    return frame

    def _progress(self, frame: _Frame) -> None:
        if self._on_progress is None:
            return
        stage = frame.get("stage")
        if stage not in ("loading", "prefill"):
            return
        try:
            self._on_progress(LocalProgress(stage=stage, done=int(frame["done"]), total=int(frame["total"])))
        except Exception:  # a faulty progress display must not end the generation
            _log.exception("the local model's progress callback failed")

    def _error(self, frame: _Frame) -> Exception:
        message = str(frame.get("message", ""))
        match frame.get("kind"):
            case "missing":
                return ConfigurationError(f"Local inference needs llama-cpp-python; {_INSTALL_HINT} ({message})")
            case "configuration":
                return ConfigurationError(f"Could not load the local model {self._model_path}: {message}")
            case "overflow":
                return ContextOverflowError(
                    f"The prompt does not fit the local model's context window of {self._n_ctx} tokens ({message})",
                    window=self._n_ctx,
                    provider=PROVIDER,
                )
            case _:
                if message == "llama.cpp could not parse the tool-call grammar":
                    return ProviderError(message, provider=PROVIDER)
                return ProviderError(f"Local inference failed: {message}", provider=PROVIDER)

    def _crashed(self, worker: WorkerHandle, stage: str) -> Exception:
        """The error for a worker that stopped answering: it died (by a signal, usually) or hung up."""
        status = worker.exit_status()
        tail = worker.stderr_tail
        if self._worker is worker:
            self._discard(worker)
        else:
            worker.close(timeout=2.0)
        extra = self._decision if isinstance(self._decision, bool) else None
        _log.debug("local model worker ended with status %s; stderr tail:\n%s", status, "\n".join(tail))
        return crash_error(status, stage=stage, extra_buffer_types_used=extra, stderr_tail=tail, provider=PROVIDER)


def _usable_context(requested: int, trained: int | None) -> int:
    """The context to allocate: ``requested`` capped by ``trained``, on llama.cpp's step (rounded up if possible)."""
    size = -(-min(requested, trained or requested) // _CONTEXT_STEP) * _CONTEXT_STEP
    if trained and size > trained:
        size = max(_CONTEXT_STEP, trained // _CONTEXT_STEP * _CONTEXT_STEP)
    return size


def _decoded(update: ChatUpdate, decoder: ReplyDecoder) -> list[ChatUpdate]:
    """Turn one raw update of a reply generated under a tool plan into what the caller sees."""
    updates: list[ChatUpdate] = []
    if update.text_delta and (text := decoder.feed(update.text_delta)):
        updates.append(ChatUpdate(text_delta=text))
    if update.usage is not None or update.finish_reason is not None:  # the worker's last update
        reply = decoder.finish()
        if reply.text:
            updates.append(ChatUpdate(text_delta=reply.text))
        finish_reason = update.finish_reason
        if reply.tool_calls and finish_reason == "stop":
            finish_reason = "tool_calls"
        updates.append(ChatUpdate(tool_calls=reply.tool_calls, usage=update.usage, finish_reason=finish_reason))
    return updates


async def _join(worker: asyncio.Task[None]) -> None:
    """Wait until the worker thread has ended, even if this task is cancelled meanwhile (re-raised afterwards)."""
    cancelled = False
    while not worker.done():
        try:
            await asyncio.wait((worker,))
        except asyncio.CancelledError:
            cancelled = True
    if not worker.cancelled():
        worker.exception()  # marks a failure seen when the reader left early and will never ask for it
    if cancelled:
        raise asyncio.CancelledError
