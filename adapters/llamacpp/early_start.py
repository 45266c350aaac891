"""Workers started (and their model load requested) before any client needs one, taken over by the first that does.

A keyless one-shot knows early that it will run the local model, long before it has built its agent: starting the
worker then lets the child import llama.cpp and load the model while the parent is still importing and wiring. The
client that later needs a worker with the same load settings takes the early one over
(:meth:`~ironhive.adapters.llamacpp.client.LlamaCppChatClient.start_early`); an early worker with other settings,
or one nobody takes before the process exits, is ended (it is only loading a model: nothing of it is lost).
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ironhive.adapters.llamacpp.worker_process import WorkerHandle, WorkerProcess

if TYPE_CHECKING:
    from ironhive.adapters.llamacpp.resident import ResidentPlace


@dataclass(frozen=True, kw_only=True, slots=True)
class EarlyWorker:
    """A worker started early.

    Attributes:
        settings: The ``load`` settings it was sent.
        worker: The process.
        request_id: The id of its ``load`` request, whose reply the taker reads.
    """

    settings: Mapping[str, Any]
    worker: WorkerHandle
    request_id: int


_log = logging.getLogger(__name__)
_lock = threading.Lock()
_waiting: list[EarlyWorker] = []
_exit_hook_installed = False


def start(settings: Mapping[str, Any], resident: ResidentPlace | None = None) -> EarlyWorker:
    """Start a worker and send it ``{"op": "load", "settings": settings, "prefetch": true}`` without waiting.

    Args:
        settings: The load settings, as the client sends them.
        resident: Where this user's resident workers live: the run then uses (or starts) the resident fitting
            ``settings`` (:mod:`ironhive.adapters.llamacpp.resident`), which has the model loaded and the last prompt
            evaluated; a child worker when that cannot be had (another run is using it). ``None``: a child worker.

    Returns:
        The early worker, waiting to be taken by :func:`claim`.
    """
    global _exit_hook_installed
    worker: WorkerHandle | None = None
    if resident is not None:
        from ironhive.adapters.llamacpp.resident import acquire

        worker = acquire(settings, resident)
    kind = "resident worker" if worker is not None else "worker"
    if worker is None:
        worker = WorkerProcess()
    request_id = worker.next_id()
    # prefetch: once loaded, the worker restores the prefix state used last (the run's prompt most likely starts so).
    worker.send({"op": "load", "id": request_id, "settings": dict(settings), "prefetch": True})
    early = EarlyWorker(settings=dict(settings), worker=worker, request_id=request_id)
    _log.info("local model: %s %d started early", kind, worker.pid)
    with _lock:
        _waiting.append(early)
        if not _exit_hook_installed:
            atexit.register(discard_all)
            _exit_hook_installed = True
    return early


def claim(settings: Mapping[str, Any]) -> EarlyWorker | None:
    """Take the early worker started with exactly ``settings``, if there is one; early workers with other settings
    are ended (the run turned out to need another model or context).
    """
    with _lock:
        waiting = list(_waiting)
        _waiting.clear()
    taken = next((early for early in waiting if early.settings == settings), None)
    for early in waiting:
        if early is not taken:
            early.worker.close(timeout=0.0)
    return taken


def waiting() -> int:
    """How many early workers wait to be taken."""
    with _lock:
        return len(_waiting)


def discard_all() -> None:
    """End every early worker nobody has taken (called at exit)."""
    with _lock:
        waiting = list(_waiting)
        _waiting.clear()
    for early in waiting:
        early.worker.close(timeout=0.0)
