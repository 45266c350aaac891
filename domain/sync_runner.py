"""Runs coroutines and async generators from synchronous code, all on one private event loop kept between calls."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
from contextlib import aclosing, suppress
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

Finalizer = Callable[[], Awaitable[object]]
"""A clean-up step to run on the private loop before it closes (``client.aclose``, for instance)."""


@dataclass(frozen=True, slots=True)
class _Item(Generic[T]):
    value: T


@dataclass(frozen=True, slots=True)
class _End:
    error: BaseException | None = None


class SyncRunner:
    """The event loop behind an object's ``*_sync`` methods.

    One loop serves every call, so clients that bind to the loop they first ran on (HTTP connection pools, for
    instance) keep working from one call to the next. A streamed iteration runs its async generator inside one task
    from start to end, so cancel scopes and timeouts that span its ``yield``\\ s stay in one task. The loop is made on
    first use and closed by ``close()``, or when the runner is garbage-collected or the interpreter exits. Not
    thread-safe: use it from one thread at a time.
    """

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None
        self._finalizer: weakref.finalize[[asyncio.Runner, tuple[Finalizer, ...]], SyncRunner] | None = None

    def run(self, coroutine: Callable[[], Coroutine[Any, Any, T]], *, caller: str, instead: str) -> T:
        """Run ``coroutine()`` to completion on the private loop.

        Args:
            coroutine: Makes the coroutine (called only once the call is known to be allowed).
            caller: The synchronous method's name, for the error message (``run_sync``).
            instead: What to write in async code instead, for the error message (``await agent.run(...)``).

        Returns:
            The coroutine's result.

        Raises:
            RuntimeError: An event loop is already running in this thread.
        """
        return self._loop(caller, instead).run(coroutine())

    def iterate(
        self, generator: Callable[[], AsyncGenerator[T, None]], *, caller: str, instead: str
    ) -> Generator[T, None, None]:
        """Iterate ``generator()`` from synchronous code, one item at a time.

        The items are produced one ahead at most. Stopping early (``break``, an exception, ``close()``) cancels the
        generator's task and closes the generator before control returns.

        Args:
            generator: Makes the async generator (called on the private loop).
            caller: The synchronous method's name, for the error message.
            instead: What to write in async code instead, for the error message.

        Returns:
            A generator of the items.

        Raises:
            RuntimeError: An event loop is already running in this thread (raised here, not at the first item).
        """
        runner = self._loop(caller, instead)
        return self._iterate(runner, generator, caller, instead)

    def close(self, *finalizers: Finalizer) -> None:
        """Run ``finalizers`` on the private loop, one after another, then close the loop.

        Safe to call more than once, and from async code (the loop is then closed from a helper thread). A later call
        of ``run`` or ``iterate`` opens a new loop.

        Args:
            finalizers: Clean-up steps for things bound to the loop (a fresh loop runs them when none was made yet).

        Raises:
            BaseException: The first error a finalizer raised (the others still run, and the loop is closed).
        """
        runner, self._runner = self._runner, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if runner is None:
            if not finalizers:
                return
            runner = asyncio.Runner(loop_factory=asyncio.new_event_loop)
        _shut_down(runner, finalizers)

    def _loop(self, caller: str, instead: str) -> asyncio.Runner:
        _refuse_inside_a_loop(caller, instead)
        if self._runner is None:
            # loop_factory: the loop stays private (asyncio.Runner would otherwise install it as the thread's loop).
            self._runner = asyncio.Runner(loop_factory=asyncio.new_event_loop)
            self._finalizer = weakref.finalize(self, _shut_down, self._runner, ())
        return self._runner

    def _iterate(
        self, runner: asyncio.Runner, generator: Callable[[], AsyncGenerator[T, None]], caller: str, instead: str
    ) -> Generator[T, None, None]:
        queue: asyncio.Queue[_Item[T] | _End] = asyncio.Queue(maxsize=1)

        async def start() -> asyncio.Task[None]:
            return asyncio.create_task(_pump(generator(), queue))

        pump = runner.run(start())
        loop = runner.get_loop()
        try:
            while True:
                _refuse_inside_a_loop(caller, instead)
                if loop.is_closed():
                    raise RuntimeError(f"{caller}(): the iteration was stopped because its event loop was closed.")
                item = runner.run(queue.get())
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    return
                yield item.value
        finally:
            if not pump.done():
                pump.cancel()
                if _running_loop() is None and not loop.is_closed():
                    runner.run(_settle(pump))


def _refuse_inside_a_loop(caller: str, instead: str) -> None:
    if _running_loop() is not None:
        raise RuntimeError(
            f"{caller}() cannot be called while an event loop is running in this thread (inside async code, "
            f"or in a notebook); use `{instead}` there instead."
        )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _pump(chunks: AsyncGenerator[T, None], queue: asyncio.Queue[_Item[T] | _End]) -> None:
    """Move the generator's items into the queue, then its end (or its error); all in this one task."""
    async with aclosing(chunks):
        try:
            async for chunk in chunks:
                await queue.put(_Item(chunk))
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # handed over: the consumer re-raises it in its own frame
            await queue.put(_End(error))
            return
    await queue.put(_End())


async def _settle(task: asyncio.Task[None]) -> None:
    with suppress(asyncio.CancelledError):
        await task


def _shut_down(runner: asyncio.Runner, finalizers: tuple[Finalizer, ...]) -> None:
    """Run the finalizers on the runner's loop and close it; from a helper thread when a loop runs in this one."""
    if _running_loop() is None:
        _finalize_and_close(runner, finalizers)
        return
    failure: list[BaseException] = []

    def work() -> None:
        try:
            _finalize_and_close(runner, finalizers)
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=work, name="ironhive-sync-runner-close")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def _finalize_and_close(runner: asyncio.Runner, finalizers: tuple[Finalizer, ...]) -> None:
    first: BaseException | None = None
    try:
        for finalize in finalizers:
            try:
                runner.run(_awaited(finalize))
            except BaseException as error:
                first = first or error
    finally:
        runner.close()
    if first is not None:
        raise first


async def _awaited(finalize: Finalizer) -> None:
    await finalize()
