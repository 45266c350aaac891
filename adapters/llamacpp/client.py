"""LlamaCppChatClient: in-process GGUF inference through llama-cpp-python, as a ChatClient."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias

from ironhive.adapters.llamacpp.context_length import UNKNOWN_TRAINED_CONTEXT, auto_context_length, total_ram_bytes
from ironhive.adapters.llamacpp.mapping import (
    CompletionSettings,
    LlamaMessage,
    TokenCounter,
    completion_settings,
    finish_reason_of,
    text_delta_of,
    to_llama_messages,
)
from ironhive.adapters.llamacpp.model_files import bundled_model_path, gguf_trained_context
from ironhive.adapters.llamacpp.tool_calling import (
    ToolPlan,
    plan_tools,
    response_grammar,
    tool_instructions,
    with_tool_instructions,
)
from ironhive.adapters.llamacpp.tool_output import ReplyDecoder
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, IronHiveError, ProviderError
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

PROVIDER: Final = "local"
"""The provider name carried by the errors this client raises."""

_INSTALL_HINT = 'install it with: pip install "ironhive[local]"'
# llama-cpp-python raises a bare ValueError when the prompt does not fit; this is the only way to tell it apart.
_OVERFLOW_MARKER = "exceed context window"


class _End:
    """Marks the end of a worker's output on the queue."""


_END: Final = _End()

# llama.cpp rounds the context up to a multiple of this, while llama-cpp-python sizes its token buffer by the size it
# was given: a prompt between the two sizes then crashes inside llama-cpp-python instead of overflowing cleanly.
_CONTEXT_STEP: Final = 256

_Emit: TypeAlias = Callable[[ChatUpdate | _End], bool]


class LlamaCppChatClient:
    """A chat client running a GGUF model in this process with llama.cpp (through llama-cpp-python).

    The model loads on the first call, in a worker thread, and stays loaded until :meth:`close`. Generation runs in a
    worker thread too, one at a time per client (llama.cpp contexts are not thread-safe), and stops at the next token
    once the caller stops reading a stream or is cancelled.

    Tools: when ``options.tools`` offers any (and ``tool_mode`` is not ``none``), the system prompt names them and the
    reply is held by a llama.cpp grammar to one JSON object, a tool call or an answer (see
    :mod:`ironhive.adapters.llamacpp.tool_calling`). A call comes back as a ``ToolCallPart`` with the arguments the
    model wrote, even when they do not fit the tool's schema (the agent loop answers those with a recovery
    directive). An answer's text streams as it is generated, unescaped from the JSON string. Without tools the model
    answers in free text, streamed.

    Args:
        model_path: The GGUF file to run; ``None`` runs the bundled SmolLM2-135M-Instruct model.
        n_ctx: The context window to allocate, in tokens (``maxContextLength``); ``None`` sizes it by the machine's
            RAM (:func:`~ironhive.adapters.llamacpp.context_length.auto_context_length`), capped at 8192 for a model
            that does not state its trained context. Either way it is capped by the model's trained context and
            rounded up to a multiple of 256 as llama.cpp does.
        n_threads: CPU threads for generation; ``None`` keeps llama-cpp-python's default.
        seed: Sampling seed applied to every call (reproducible output); ``None`` lets llama.cpp choose.
        id_factory: Makes the ids of tool calls (random ``call_...`` ids when omitted).

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
    ) -> None:
        if n_ctx is not None and n_ctx < 1:
            raise ConfigurationError(f"n_ctx must be at least 1, got {n_ctx}")
        if n_threads is not None and n_threads < 1:
            raise ConfigurationError(f"n_threads must be at least 1, got {n_threads}")
        if model_path is None:
            path = bundled_model_path()
        else:
            path = Path(model_path).expanduser()
            if not path.is_file():
                raise ConfigurationError(f"The local model file {path} does not exist")
        self._model_path = path
        trained = gguf_trained_context(path)
        if n_ctx is None:
            n_ctx = min(auto_context_length(total_ram_bytes()), trained or UNKNOWN_TRAINED_CONTEXT)
        self._n_ctx = _usable_context(n_ctx, trained)
        self._n_threads = n_threads
        self._seed = seed
        self._id_factory = id_factory or new_call_id
        # Guards loading, generating and releasing alike: one llama.cpp context serves one call at a time.
        self._lock = threading.Lock()
        self._llama: Any = None

    @property
    def model_name(self) -> str:
        """The model's name: the GGUF file's stem."""
        return self._model_path.stem

    @property
    def model_path(self) -> Path:
        """The GGUF file this client runs."""
        return self._model_path

    async def warm_up(self) -> None:
        """Load the model now, off the event loop (the ``Preloadable`` port)."""

        def load() -> None:
            with self._lock:
                self._loaded()

        await asyncio.to_thread(load)

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer (loads the model on first use)."""
        with self._lock:
            return len(self._loaded().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    @property
    def context_size(self) -> int:
        """The context window in tokens: ``n_ctx`` capped by the model's trained context, on llama.cpp's 256 step."""
        return self._n_ctx

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer ``messages`` in one piece.

        Args:
            messages: The conversation so far, oldest first.
            options: Settings of this call (``temperature``, ``max_output_tokens``, ``tools`` and ``tool_mode`` are
                honoured).

        Returns:
            The assistant's text or tool call, with usage and finish reason (``tool_calls`` after a call).

        Raises:
            ConfigurationError: llama-cpp-python is not installed, the model file cannot be loaded, or the tool mode
                is unknown or requires a tool that is not offered.
            ContextOverflowError: The prompt does not fit the context window.
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
        the next token; closing the iterator returns once the worker thread has ended.

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
            ProviderError: llama.cpp failed.
        """
        return self._stream(messages, options)

    def close(self) -> None:
        """Release the model. A later call loads it again.

        Blocks until a running generation has finished, so call it when no call is in flight.
        """
        with self._lock:
            llama, self._llama = self._llama, None
            if llama is not None:
                llama.close()

    async def _stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncGenerator[ChatUpdate, None]:
        plan = plan_tools(options)
        llama_messages = to_llama_messages(messages, json_turns=plan is not None)
        if plan is not None:
            llama_messages = with_tool_instructions(llama_messages, tool_instructions(plan))
        settings = completion_settings(options, seed=self._seed)
        decoder = ReplyDecoder(plan, self._id_factory) if plan is not None else None
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChatUpdate | _End] = asyncio.Queue()
        stop = threading.Event()

        def emit(item: ChatUpdate | _End) -> bool:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody reads any more
                stop.set()
                return False
            return True

        worker = asyncio.create_task(asyncio.to_thread(self._generate, llama_messages, settings, plan, emit, stop))
        try:
            while not isinstance(item := await queue.get(), _End):
                if decoder is None:
                    yield item
                    continue
                for update in _decoded(item, decoder):
                    yield update
            await worker
        finally:
            stop.set()
            await _join(worker)

    def _generate(
        self,
        messages: list[LlamaMessage],
        settings: CompletionSettings,
        plan: ToolPlan | None,
        emit: _Emit,
        stop: threading.Event,
    ) -> None:
        """Run one generation in a worker thread, handing updates to ``emit`` until done or ``stop`` is set."""
        try:
            with self._lock:
                if stop.is_set():
                    return
                self._generate_locked(self._loaded(), messages, settings, plan, emit, stop)
        finally:
            emit(_END)

    def _generate_locked(
        self,
        llama: Any,
        messages: list[LlamaMessage],
        settings: CompletionSettings,
        plan: ToolPlan | None,
        emit: _Emit,
        stop: threading.Event,
    ) -> None:
        from llama_cpp import LogitsProcessorList  # loaded already, by _load

        counter = TokenCounter()
        chunks: Any = None
        extra: dict[str, Any] = {}
        try:
            if plan is not None:
                extra["grammar"] = _checked_grammar(llama, response_grammar(plan))
            chunks = llama.create_chat_completion(
                messages=messages,
                stream=True,
                logits_processor=LogitsProcessorList([counter]),
                **settings.as_kwargs(),
                **extra,
            )
            finish_reason: FinishReason | None = None
            # Checked before asking for each chunk, so generation stops at the next token once the reader is gone.
            while not stop.is_set():
                chunk = next(chunks, None)
                if chunk is None:
                    emit(ChatUpdate(usage=counter.usage(finish_reason), finish_reason=finish_reason))
                    return
                text, raw_finish = text_delta_of(chunk)
                if text and not emit(ChatUpdate(text_delta=text)):
                    return
                finish_reason = finish_reason_of(raw_finish) or finish_reason
        except ValueError as exc:
            if _OVERFLOW_MARKER in str(exc):
                raise ContextOverflowError(
                    f"The prompt does not fit the local model's context window of {self._n_ctx} tokens ({exc})",
                    window=self._n_ctx,
                    provider=PROVIDER,
                ) from exc
            raise _provider_error(exc) from exc
        except IronHiveError:
            raise
        except Exception as exc:
            raise _provider_error(exc) from exc
        finally:
            if chunks is not None:
                chunks.close()  # finalizes llama-cpp-python's generator, which ends its token loop

    def _loaded(self) -> Any:
        """The loaded model, loading it first if needed; the caller holds ``self._lock``."""
        if self._llama is None:
            self._llama = self._load()
        return self._llama

    def _load(self) -> Any:
        try:
            import llama_cpp
        except (ImportError, OSError, RuntimeError) as exc:
            raise ConfigurationError(f"Local inference needs llama-cpp-python; {_INSTALL_HINT}") from exc
        settings: dict[str, Any] = {"model_path": str(self._model_path), "n_ctx": self._n_ctx, "verbose": False}
        if self._n_threads is not None:
            settings["n_threads"] = self._n_threads
        if self._seed is not None:
            settings["seed"] = self._seed
        try:
            # verbose=False: llama.cpp's log goes to llama-cpp-python's logger (errors only, to stderr) and the loader's
            # direct output is silenced, so none of it reaches stdout. The silencing points file descriptors 1 and 2 at
            # /dev/null for the whole process while the model loads (well under a second for the bundled model).
            llama = llama_cpp.Llama(**settings)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConfigurationError(f"Could not load the local model {self._model_path}: {exc}") from exc
        return llama


def _usable_context(requested: int, trained: int | None) -> int:
    """The context to allocate: ``requested`` capped by ``trained``, on llama.cpp's step (rounded up if possible)."""
    size = -(-min(requested, trained or requested) // _CONTEXT_STEP) * _CONTEXT_STEP
    if trained and size > trained:
        size = max(_CONTEXT_STEP, trained // _CONTEXT_STEP * _CONTEXT_STEP)
    return size


def _checked_grammar(llama: Any, gbnf: str) -> Any:
    """``gbnf`` as a LlamaGrammar, once llama.cpp has parsed it.

    llama-cpp-python hands llama.cpp's result for a grammar it cannot parse (a null sampler) straight to the sampler
    chain, which then crashes the whole process; so the grammar is parsed once here first.
    """
    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

    probe = llama_cpp.llama_sampler_init_grammar(llama._model.vocab, gbnf.encode("utf-8"), b"root")
    if not probe:
        raise ProviderError("llama.cpp could not parse the tool-call grammar", provider=PROVIDER)
    llama_cpp.llama_sampler_free(probe)
    return LlamaGrammar.from_string(gbnf, verbose=False)


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


def _provider_error(exc: Exception) -> ProviderError:
    return ProviderError(f"Local inference failed: {type(exc).__name__}: {exc}", provider=PROVIDER)


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
