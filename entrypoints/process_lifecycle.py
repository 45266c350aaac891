"""A non-interactive run's process: its garbage collector paused while it starts, its end without module teardown."""

from __future__ import annotations

import contextlib
import gc
import os
import sys

TYPE_CHECKING = False  # not typing's: the warm-path client imports this module and stays light
if TYPE_CHECKING:
    from typing import NoReturn

_paused = False


def pause_collection() -> None:
    """Pause the cyclic garbage collector while this process imports and wires what its run needs.

    Nearly everything made then lives until the end (modules, classes, the built agent), yet each of the thousands of
    objects an import makes counts towards the next collection: a one-shot run spends about 40 ms of its start in
    collections that find nothing. :func:`resume_collection` freezes those objects and collects again.
    """
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collection() -> None:
    """Once the run is wired: move every object made so far to the permanent generation (no collection looks at them
    again) and collect as usual from here on. Does nothing unless :func:`pause_collection` paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def end_process(code: int, report: int = -1) -> NoReturn:
    """End the process as interpreter shutdown would, without tearing down its imported modules.

    Python's finalization waits for threads, runs ``atexit`` callbacks (logging, ``weakref.finalize``), flushes stdout
    and stderr (a failed flush exits 120), then frees every module and object: for a run that imported an SDK that is
    over 80 ms, and in a child of the warm process it also touches every preloaded object, copying their pages. The
    first steps are kept, garbage is collected (so unreachable cycles are finalized, as shutdown does), and the
    process ends there. A file left open and unflushed is not flushed then: ironhive closes its files, and logging
    flushes its handlers in its exit callback.

    With ``report``, the standard descriptors are closed before the end (a reader of the run's output sees the end of
    it) and the exit code goes to ``report``: the warm process hands it to the client at once, instead of after the
    kernel has freed this process's memory (several milliseconds for the preloaded modules' page tables).

    Args:
        code: The run's exit code.
        report: The pipe to the warm process for the exit code (-1: none).
    """
    import atexit
    import threading

    wait_for_threads = getattr(threading, "_shutdown", None)
    if wait_for_threads is not None:
        wait_for_threads()
    atexit._run_exitfuncs()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except (OSError, ValueError):
            code = 120
    code &= 0xFF  # what the exit status keeps of it
    if report >= 0:
        for fd in range(3):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.write(report, str(code).encode())
    os._exit(code)
