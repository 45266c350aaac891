"""Runs one function in several fresh processes at once (``spawn``: nothing of the test process is shared)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence


def run_in_processes(
    target: Callable[..., None], arguments: Sequence[tuple[object, ...]], timeout: float = 120
) -> None:
    """Start ``target(*args)`` in one process per ``args``, all at once, and wait for them; each must exit 0."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=args) for args in arguments]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=timeout)
        assert worker.exitcode == 0, f"{target.__name__}{worker.name} exited with {worker.exitcode}"
