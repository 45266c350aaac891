"""The llama.cpp worker process: loads one GGUF model and answers frames (run as ``python -m`` this module).

LlamaCppChatClient starts it and speaks length-prefixed JSON frames (:mod:`ironhive.adapters.llamacpp.frames`) over
its stdin and stdout; its stderr is llama.cpp's log and, should native code crash, Python's fault handler report. So a
crash in llama.cpp ends this process only, and the client turns it into an error that names the cause.

Requests (each with an ``id``, answered in order, one at a time):

- ``{"op": "load", "settings": {...}}`` → ``progress`` (stage ``loading``) frames, then ``loaded`` with the load
  parameters actually used (``use_extra_bufts`` read back from llama-cpp-python's model parameters). With
  ``"prefetch": true`` the worker then restores the most recently used prefix-cache entry into memory (a worker
  started early does that while its client is still starting up; the next prompt most likely starts the same way).
- ``{"op": "tokenize", "text": ...}`` → ``tokens`` with the count.
- ``{"op": "generate", "messages": [...], "completion": {...}, "grammar": ...}`` → ``progress`` (stage ``prefill``)
  frames, ``delta`` frames, then ``done`` (finish reason, usage, prompt statistics).
- ``{"op": "stop", "id": n}`` (read by a separate thread, so it works mid-generation) → request ``n`` stops at its
  next token or prefill chunk and ends with ``done`` (``stopped: true``).
- ``{"op": "close"}`` or the end of stdin → the process exits.

A request that fails ends with ``error`` (``kind``: ``missing``, ``configuration``, ``overflow``, ``provider``).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import functools
import importlib
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

from ironhive.adapters.llamacpp.cpu_probe import ExtraBufferDecision, decide_extra_buffer_types
from ironhive.adapters.llamacpp.cpu_settings import CpuSettings, decide_cpu_settings
from ironhive.adapters.llamacpp.frames import FrameError, read_frame, write_frame
from ironhive.adapters.llamacpp.mapping import TokenCounter, finish_reason_of, text_delta_of
from ironhive.adapters.llamacpp.prefix_cache import (
    CachedState,
    PrefixStateCache,
    identity_digest,
    model_file_identity,
)
from ironhive.adapters.llamacpp.repetition import RepetitionDetector
from ironhive.adapters.llamacpp.sampling import grammar_last_init_sampler
from ironhive.ports.chat import FinishReason

OVERFLOW_MARKER: Final = "exceed context window"
"""llama-cpp-python raises a bare ValueError when the prompt does not fit; this is the only way to tell it apart."""
GRAMMAR_ERROR: Final = "llama.cpp could not parse the tool-call grammar"
# A disk state is loaded only when it covers this many more prompt tokens than the memory already holds, and saved
# only when the context holds this many tokens more than the best cached entry: below that, evaluating is cheaper.
MIN_GAIN: Final = 16

Frame = dict[str, Any]
Probe = Callable[[bool | None], ExtraBufferDecision]
CpuTuning = Callable[[int | None], CpuSettings]


class Failure(Exception):
    """A request failed; ``kind`` tells the client which error to raise."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Stopped(Exception):
    """Raised between prefill chunks once the client asked to stop."""


def load_model(
    module: Any,
    kwargs: Mapping[str, Any],
    *,
    use_extra_bufts: bool,
    on_progress: Callable[[float], None] | None = None,
) -> Any:
    """Construct ``module.Llama(**kwargs)`` with llama.cpp's ``use_extra_bufts`` model parameter set.

    llama-cpp-python 0.3.36 has no keyword for it (unknown keywords are swallowed), but builds its model parameters
    from ``llama_cpp.llama_cpp.llama_model_default_params()`` inside the constructor; so that function is wrapped for
    the duration of the constructor, to return defaults with ``use_extra_bufts`` (and a load progress callback) set.
    This process loads one model and nothing else runs meanwhile, so the temporary patch has no other reader.
    """
    low: Any = getattr(module, "llama_cpp", None)
    original: Any = getattr(low, "llama_model_default_params", None)
    if original is None:  # not llama-cpp-python's layout (a stand-in package): nothing to set the parameter on
        return module.Llama(**kwargs)
    callback: Any = None
    if on_progress is not None and hasattr(low, "llama_progress_callback"):

        def report(progress: float, _user_data: object) -> bool:
            # Inside a ctypes callback an exception cannot propagate; progress is best effort.
            with contextlib.suppress(Exception):
                on_progress(float(progress))
            return True

        callback = low.llama_progress_callback(report)

    def params() -> Any:
        value = original()
        value.use_extra_bufts = use_extra_bufts
        if callback is not None:
            value.progress_callback = callback
        return value

    low.llama_model_default_params = params
    try:
        llama = module.Llama(**kwargs)
    finally:
        low.llama_model_default_params = original
    llama._ironhive_progress_callback = callback  # keeps the ctypes callback alive as long as the model
    return llama


class _Run:
    """Mutable figures of the generation in progress."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.evaluated = 0
        self.restored = 0
        self.started = time.perf_counter()
        self.prefill_seconds = 0.0
        self.awaiting_prefill = True
        self.counter = TokenCounter()
        self.resampled = 0

    def stats(self, context_tokens: int) -> Frame:
        return {
            "prompt_tokens": self.prompt_tokens,
            "evaluated_tokens": self.evaluated,
            "reused_tokens": max(0, self.prompt_tokens - self.evaluated - self.restored),
            "restored_tokens": min(self.restored, self.prompt_tokens - self.evaluated),
            "context_tokens": context_tokens,
            "prefill_seconds": self.prefill_seconds,
            "resampled_tokens": self.resampled,
        }


class Worker:
    """Serves the requests of one client (see the module docstring).

    Args:
        out: Where frames go.
        import_llama: Imports the ``llama_cpp`` package (injectable for tests).
        probe: Decides ``use_extra_bufts`` from the configured override (injectable for tests).
        tuning: Chooses threads and flash attention for this machine from the configured generation threads
            (injectable for tests).
    """

    def __init__(
        self,
        out: IO[bytes],
        *,
        import_llama: Callable[[], Any] = lambda: importlib.import_module("llama_cpp"),
        probe: Probe = decide_extra_buffer_types,
        tuning: CpuTuning = decide_cpu_settings,
    ) -> None:
        self._out = out
        self._out_lock = threading.Lock()
        self._import_llama = import_llama
        self._probe = probe
        self._tuning = tuning
        self._requests: queue.Queue[Frame | None] = queue.Queue()
        self._current: int | None = None
        self._stop = threading.Event()
        self._module: Any = None
        self._llama: Any = None
        self._settings: Frame | None = None
        self._loaded_frame: Frame = {}
        self._decision_frame: Frame = {}
        self._initial_seed: int | None = None
        self._cache: PrefixStateCache | None = None
        self._prefetched = 0  # tokens of the context restored from disk by a prefetch, not yet used
        self._run = _Run()

    def attach(self, out: IO[bytes]) -> None:
        """Serve a new client on ``out`` (a resident worker's next run), keeping the loaded model and its context."""
        with self._out_lock:
            self._out = out
        self._requests = queue.Queue()
        self._stop.clear()
        if self._llama is not None and self._initial_seed is not None:
            # llama-cpp-python draws each unseeded call's seed from the previous one: a run must not depend on how
            # many runs this worker served before, so it starts where a freshly loaded model starts.
            self._llama._seed = self._initial_seed

    def enqueue(self, request: Frame) -> None:
        """Queue a request read by someone else (a resident worker reads each run's first frame itself)."""
        self._requests.put(request)

    def send(self, payload: Frame) -> None:
        """Write one frame; a parent that has gone away is ignored (the end of stdin follows)."""
        with self._out_lock, contextlib.suppress(OSError, ValueError):
            write_frame(self._out, payload)

    def read_requests(self, stream: IO[bytes]) -> None:
        """Read frames until the end of ``stream``; ``stop`` acts at once, the rest queue up for :meth:`serve`."""
        while True:
            try:
                frame = read_frame(stream)
            except (FrameError, OSError, ValueError):  # garbled, or a resident's connection reset
                frame = None
            if frame is None:
                self._stop.set()
                self._requests.put(None)
                return
            if frame.get("op") == "stop":
                if frame.get("id") == self._current:
                    self._stop.set()
                continue
            self._requests.put(frame)

    def serve(self) -> None:
        """Answer queued requests until ``close`` or the end of stdin."""
        while (request := self._requests.get()) is not None and request.get("op") != "close":
            self.handle(request)

    def handle(self, request: Frame) -> None:
        """Answer one request, ending with exactly one terminal frame (or ``error``)."""
        request_id = request.get("id")
        self._stop.clear()
        self._current = request_id if isinstance(request_id, int) else None
        try:
            match request.get("op"):
                case "load":
                    self.send({**self._load(request.get("settings") or {}), "id": request_id})
                    if request.get("prefetch"):
                        self._prefetch()
                case "tokenize":
                    text = str(request.get("text", ""))
                    count = len(self._loaded().tokenize(text.encode("utf-8"), add_bos=False, special=False))
                    self.send({"type": "tokens", "count": count, "id": request_id})
                case "generate":
                    self._generate(request)
                case other:
                    raise Failure("provider", f"unknown request {other!r}")
        except Failure as failure:
            self.send({"type": "error", "kind": failure.kind, "message": str(failure), "id": request_id})
        finally:
            self._current = None

    # --- loading -----------------------------------------------------------------------------------------------

    def _loaded(self) -> Any:
        if self._llama is None:
            raise Failure("configuration", "the model is not loaded")
        return self._llama

    def _load(self, settings: Frame) -> Frame:
        if self._llama is not None and settings == self._settings:
            self.send(self._decision_frame)  # a new client of a resident worker learns the decision too
            return self._loaded_frame
        try:
            module = self._import_llama()
        except (ImportError, OSError, RuntimeError) as exc:
            raise Failure("missing", f"{type(exc).__name__}: {exc}") from exc
        decision = self._probe(settings.get("extra_buffer_types"))
        # Announced before loading, so a crash while loading can still be reported with the setting that was used.
        self._decision_frame = {"type": "decision", "use_extra_bufts": decision.enabled, "reason": decision.reason}
        self.send(self._decision_frame)
        tuned = self._tuning(settings.get("n_threads"))
        kwargs: dict[str, Any] = {
            "model_path": settings["model_path"],
            "n_ctx": settings["n_ctx"],
            "n_threads": tuned.n_threads,
            "n_threads_batch": tuned.n_threads_batch,
            "flash_attn": tuned.flash_attn,
            "verbose": False,
        }
        for key in ("n_threads", "n_threads_batch", "n_batch", "seed"):
            if settings.get(key) is not None:
                kwargs[key] = settings[key]
        if self._llama is not None:
            self._llama.close()
            self._llama = None
            self._prefetched = 0

        reported = -1

        def progress(value: float) -> None:
            nonlocal reported
            percent = max(0, min(100, int(value * 100)))
            if percent > reported:  # llama.cpp calls back once per tensor: hundreds of times
                reported = percent
                self.send({"type": "progress", "stage": "loading", "done": percent, "total": 100})

        try:
            try:
                llama = load_model(module, kwargs, use_extra_bufts=decision.enabled, on_progress=progress)
            except (ValueError, RuntimeError) as exc:
                if not kwargs.get("flash_attn"):
                    raise
                # llama.cpp could not make a context with flash attention for this model: load it without.
                print(f"ironhive: loading without flash attention ({exc})", file=sys.stderr)
                kwargs["flash_attn"] = False
                llama = load_model(module, kwargs, use_extra_bufts=decision.enabled, on_progress=progress)
        except (ValueError, RuntimeError, OSError) as exc:
            raise Failure("configuration", str(exc)) from exc
        self._module, self._llama, self._settings = module, llama, settings
        seed = getattr(llama, "_seed", None)
        self._initial_seed = seed if isinstance(seed, int) else None
        self._install_hooks(llama)
        self._cache = self._open_cache(settings, module, llama)
        model_params = getattr(llama, "model_params", None)
        used = getattr(model_params, "use_extra_bufts", decision.enabled)
        self._loaded_frame = {
            "type": "loaded",
            "params": {
                "use_extra_bufts": bool(used),
                "extra_buffer_source": decision.source,
                "extra_buffer_reason": decision.reason,
                "n_ctx": kwargs["n_ctx"],
                "n_threads": getattr(llama, "n_threads", None),
                "n_threads_batch": getattr(llama, "n_threads_batch", None),
                "n_batch": getattr(llama, "n_batch", None),
                "n_ubatch": getattr(getattr(llama, "context_params", None), "n_ubatch", None),
                "flash_attn": kwargs["flash_attn"],
                "cpu_settings_reason": tuned.reason,
                "prefix_cache": str(self._cache.folder) if self._cache is not None else None,
                "llama_cpp_version": str(getattr(module, "__version__", "")),
            },
        }
        return self._loaded_frame

    def _open_cache(self, settings: Frame, module: Any, llama: Any) -> PrefixStateCache | None:
        root, max_bytes = settings.get("prefix_cache_dir"), int(settings.get("prefix_cache_max_bytes") or 0)
        if not root or max_bytes <= 0:
            return None
        context = getattr(llama, "context_params", None)
        if context is None:  # not llama-cpp-python's Llama (a stand-in): no state to cache
            return None
        try:
            parts = model_file_identity(Path(settings["model_path"]))
        except OSError:
            return None
        parts += [
            f"llama_cpp {getattr(module, '__version__', '')}",
            f"n_ctx={llama.n_ctx()}",
            f"n_batch={context.n_batch}",
            f"n_ubatch={context.n_ubatch}",
            f"type_k={context.type_k}",
            f"type_v={context.type_v}",
            f"flash_attn={getattr(context, 'flash_attn_type', getattr(context, 'flash_attn', ''))}",
            f"swa_full={getattr(context, 'swa_full', '')}",
        ]
        return PrefixStateCache(Path(root), identity_digest(parts), max_bytes=max_bytes)

    # --- generation ----------------------------------------------------------------------------------------------

    def _install_hooks(self, llama: Any) -> None:
        """Route llama-cpp-python's ``generate`` and ``eval`` of this model through the worker.

        ``generate`` first restores a longer evaluated prefix from disk, if there is one; llama-cpp-python's own
        prefix match then evaluates only the rest; it counts the tokens sampled (llama-cpp-python reports no usage
        when streaming). ``eval`` evaluates the prompt in ``n_batch`` chunks (as it would), reporting progress and
        honouring a stop between chunks. ``_init_sampler`` applies a grammar last, llama.cpp's way
        (:mod:`ironhive.adapters.llamacpp.sampling`).
        """
        cls = type(llama)

        def generate(tokens: Sequence[int], **kwargs: Any) -> Iterator[int]:
            tokens = list(tokens)
            run = self._run
            run.prompt_tokens = len(tokens)
            run.started = time.perf_counter()
            run.restored = self._restore(llama, tokens)
            if not run.restored and self._prefetched:  # restored from disk before the request came
                run.restored = min(self._prefetched, self._in_memory_prefix(llama, tokens))
            self._prefetched = 0
            for token in cls.generate(llama, tokens, **kwargs):
                run.counter.sampled(len(tokens))
                yield token

        def evaluate(tokens: Sequence[int]) -> None:
            run = self._run
            if not run.awaiting_prefill:
                cls.eval(llama, tokens)
                return
            run.awaiting_prefill = False
            total = len(tokens)
            run.evaluated = total
            step = max(1, int(llama.n_batch))
            try:
                for start in range(0, total, step):
                    if self._stop.is_set():
                        run.evaluated = start
                        raise _Stopped
                    cls.eval(llama, tokens[start : start + step])
                    if total > step:
                        done = min(total, start + step)
                        self.send({"type": "progress", "stage": "prefill", "done": done, "total": total})
            finally:
                run.prefill_seconds = time.perf_counter() - run.started

        llama.generate = generate
        llama.eval = evaluate
        low = getattr(self._module, "llama_cpp", None)
        if hasattr(cls, "_init_sampler") and hasattr(low, "llama_sampler_apply"):

            def resampled() -> None:
                self._run.resampled += 1

            stock = functools.partial(cls._init_sampler, llama)
            llama._init_sampler = grammar_last_init_sampler(llama, low, stock, on_resample=resampled)

    def _in_memory_prefix(self, llama: Any, tokens: Sequence[int]) -> int:
        held = llama.input_ids[: llama.n_tokens].tolist()
        common = 0
        for left, right in zip(held, tokens, strict=False):
            if left != right:
                break
            common += 1
        return common

    def _restore(self, llama: Any, tokens: list[int]) -> int:
        """Load the cached state sharing the longest prefix with ``tokens``, if it beats memory; tokens restored."""
        cache = self._cache
        if cache is None:
            return 0
        try:
            match = cache.best_match(tokens)
            if match is None or match.common <= self._in_memory_prefix(llama, tokens) + MIN_GAIN:
                return 0
            entry = cache.load(match.path)
        except OSError:
            return 0
        if entry is None:
            return 0
        count = self._apply_state(llama, cache, match.path, entry)
        return min(match.common, count)

    def _prefetch(self) -> None:
        """Restore the most recently used prefix-cache entry into the (empty) context, guessing the next prompt."""
        llama, cache = self._llama, self._cache
        if llama is None or cache is None or int(llama.n_tokens) > 0:
            return
        try:
            path = cache.most_recent()
            entry = cache.load(path) if path is not None else None
        except OSError:
            return
        if path is not None and entry is not None:
            self._prefetched = self._apply_state(llama, cache, path, entry)

    def _apply_state(self, llama: Any, cache: PrefixStateCache, path: Path, entry: CachedState) -> int:
        """Load ``entry`` (read from ``path``) into llama.cpp's context; the tokens it holds (0 if refused)."""
        if len(entry.tokens) > llama.n_ctx():
            return 0
        low = self._module.llama_cpp
        size = len(entry.state)
        buffer = (ctypes.c_uint8 * size).from_buffer_copy(entry.state)
        if int(low.llama_state_set_data(llama._ctx.ctx, buffer, size)) != size:
            llama.reset()
            cache.discard(path)
            return 0
        count = len(entry.tokens)
        llama.input_ids[:count] = entry.tokens
        llama.n_tokens = count
        llama._requires_eval = True
        return count

    def _save(self, llama: Any) -> bool:
        """Write the evaluated context to the prefix cache, unless an entry already covers nearly all of it."""
        cache = self._cache
        count = int(llama.n_tokens)
        if cache is None or count <= MIN_GAIN:
            return False
        tokens = llama.input_ids[:count].tolist()
        try:
            match = cache.best_match(tokens)
            if match is not None and match.common >= count - MIN_GAIN:
                return False
            low = self._module.llama_cpp
            size = int(low.llama_state_get_size(llama._ctx.ctx))
            buffer = (ctypes.c_uint8 * size)()
            written = int(low.llama_state_get_data(llama._ctx.ctx, buffer, size))
            if written <= 0 or written > size:
                return False
            return cache.save(tokens, ctypes.string_at(buffer, written)) is not None
        except OSError as exc:
            print(f"ironhive: could not write the prefix cache: {exc}", file=sys.stderr)
            return False

    def _checked_grammar(self, llama: Any, gbnf: str) -> Any:
        """``gbnf`` as a LlamaGrammar, once llama.cpp has parsed it.

        llama-cpp-python hands llama.cpp's result for a grammar it cannot parse (a null sampler) straight to the
        sampler chain, which then crashes the process; so the grammar is parsed once here first.
        """
        module = self._module
        probe = module.llama_sampler_init_grammar(llama._model.vocab, gbnf.encode("utf-8"), b"root")
        if not probe:
            raise Failure("provider", GRAMMAR_ERROR)
        module.llama_sampler_free(probe)
        return importlib.import_module("llama_cpp.llama_grammar").LlamaGrammar.from_string(gbnf, verbose=False)

    def _generate(self, request: Frame) -> None:
        llama = self._loaded()
        request_id = request.get("id")
        self._run = run = _Run()
        extra: dict[str, Any] = dict(request.get("completion") or {})
        chunks: Any = None
        finish_reason: FinishReason | None = None
        stopped = False
        detector = RepetitionDetector()
        reply = _JsonReply() if isinstance(request.get("grammar"), str) else None
        try:
            grammar = request.get("grammar")
            if isinstance(grammar, str):
                extra["grammar"] = self._checked_grammar(llama, grammar)
            chunks = llama.create_chat_completion(messages=request.get("messages") or [], stream=True, **extra)
            while True:
                # Checked before asking for each chunk, so generation stops at the next token once asked to.
                if self._stop.is_set():
                    stopped = True
                    break
                chunk = next(chunks, None)
                if chunk is None:
                    break
                text, raw_finish = text_delta_of(chunk)
                if text:
                    self.send({"type": "delta", "text": text, "id": request_id})
                    if detector.feed(text):
                        finish_reason = "repetition"
                        break
                    if reply is not None and reply.feed(text):
                        # The grammar allows nothing but the end now: sampling it would cost a token for nothing.
                        finish_reason = "stop"
                        run.counter.ended_without_end_token()
                        break
                finish_reason = finish_reason_of(raw_finish) or finish_reason
        except _Stopped:
            stopped = True
        except Failure:
            raise
        except ValueError as exc:
            kind = "overflow" if OVERFLOW_MARKER in str(exc) else "provider"
            raise Failure(kind, str(exc) if kind == "overflow" else f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise Failure("provider", f"{type(exc).__name__}: {exc}") from exc
        finally:
            if chunks is not None:
                chunks.close()  # finalizes llama-cpp-python's generator, which ends its token loop
        usage = run.counter.usage(finish_reason)
        self._current = None  # a late stop must not reach the next request
        self.send(
            {
                "type": "done",
                "id": request_id,
                "finish_reason": finish_reason,
                "stopped": stopped,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "repetition": detector.reason,
                "stats": run.stats(int(llama.n_tokens)),
            }
        )
        self._save(llama)  # after the reply went out: the client does not wait for the disk


class _JsonReply:
    """Tells when a grammar-held reply is one whole JSON object (then only the end of generation may follow)."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def feed(self, text: str) -> bool:
        """Add generated text; ``True`` once the text so far is a complete JSON object."""
        self._parts.append(text)
        if not text.rstrip().endswith("}"):
            return False
        try:
            return isinstance(json.loads("".join(self._parts)), dict)
        except ValueError:
            return False


def main() -> None:
    """Serve one client over stdin/stdout until it closes stdin."""
    # Ctrl+C reaches the whole process group: the client decides what it means (stop the reply, end the run) and
    # tells this process; dying of it here would turn an interrupt into a "crash" and lose the loaded model.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Frames get their own descriptor; whatever native code prints to stdout goes to stderr instead.
    frames = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # The fault handler writes to its own copy of stderr, which llama-cpp-python's load-time silencing leaves alone.
    faulthandler.enable(file=os.fdopen(os.dup(2), "w"), all_threads=False)
    worker = Worker(frames)
    reader = threading.Thread(target=worker.read_requests, args=(sys.stdin.buffer,), name="frames", daemon=True)
    reader.start()
    worker.serve()
    # Everything worth keeping is written (frames flushed, cache files renamed into place). Tearing llama.cpp down
    # at interpreter exit can take a second after a generation, and the client waits for this process to end.
    with contextlib.suppress(OSError, ValueError):
        frames.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
