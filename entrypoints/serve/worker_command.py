"""``ironhive worker``: runs the turns that ``ironhive serve --redis`` fronts queue (redis imported on run only)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig, ServerSection


def register(app: App) -> None:
    """Add the ``worker`` command to ``app``."""
    app.command(worker_command, name="worker")


def worker_command(
    *,
    redis: Annotated[str | None, Parameter(help="Redis URL the fronts queue turns on (default: server.redis).")] = None,
    concurrency: Annotated[
        int | None, Parameter(help="Most turns run at once (default: server.maxConcurrentTurns, 8).")
    ] = None,
    provider: Annotated[str | None, Parameter(help="Provider to use (default: the configured one).")] = None,
    model: Annotated[str | None, Parameter(name=["-m", "--model"], help="Model to use (or provider/model).")] = None,
    approval_timeout: Annotated[
        float | None,
        Parameter(help="Seconds an approval waits for its answer before it counts as rejected (default: 300)."),
    ] = None,
) -> int:
    """Run the turns of `ironhive serve --redis` fronts: any number of workers, on any hosts, same project directory.

    A session's turns run in order, one at a time; a dead worker's turn is taken over after visibilityTimeoutSeconds.

    SIGTERM or Ctrl-C stops taking turns and lets the running ones end (a second one hands them over at once).

    Example: ironhive worker --redis redis://127.0.0.1:6379/0 --concurrency 4
    """
    options = WorkerOptions(
        redis=redis,
        concurrency=concurrency,
        provider=provider,
        model=model,
        approval_timeout_seconds=approval_timeout,
        environ=os.environ,
    )
    return run_worker(options)


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkerOptions:
    """The command line of ``ironhive worker`` (flags win over the ``server`` section)."""

    redis: str | None
    concurrency: int | None
    provider: str | None
    model: str | None
    approval_timeout_seconds: float | None
    environ: Mapping[str, str]

    def usage_problem(self) -> str | None:
        """What is wrong with the flags on their own, or None (each is a usage error: exit 2)."""
        if self.concurrency is not None and self.concurrency < 1:
            return f"--concurrency must be at least 1, got {self.concurrency}"
        from ironhive.server import approval_timeout_problem

        if (problem := approval_timeout_problem(self.approval_timeout_seconds)) is not None:
            return problem
        if self.redis is not None and not self.redis.strip():
            return "--redis must not be empty"
        return None


def run_worker(options: WorkerOptions) -> int:
    """Run ``ironhive worker`` until SIGINT or SIGTERM; returns the exit code (0 after a signal, 1 when it cannot
    start, 2 for bad usage)."""
    if (problem := options.usage_problem()) is not None:
        return _fail(problem, 2)
    import asyncio

    from ironhive.configuration import load_configuration
    from ironhive.domain.errors import IronHiveError
    from ironhive.log_setup import configure_logging
    from ironhive.serve.serve_command import user_server_section

    configure_logging(options.environ)
    try:
        config = load_configuration(options.environ, Path.cwd()).config
        server = user_server_section(Path.home())
        url = (options.redis or server.redis or "").strip()
        if not url:
            return _fail("ironhive worker needs a Redis URL: --redis URL or server.redis in ~/.ironhive/config.yaml", 2)
        asyncio.run(_work(options, config, server, url))
    except IronHiveError as error:
        return _fail(str(error), 1)
    return 0


async def _work(options: WorkerOptions, config: IronHiveConfig, server: ServerSection, url: str) -> None:
    import asyncio
    import signal

    from ironhive.adapters.config.masking import mask_urls
    from ironhive.adapters.serve.redis_keys import TurnKeys
    from ironhive.adapters.serve.redis_worker import RedisTurnWorker
    from ironhive.adapters.sessions.redis_connection import open_redis, project_key_for
    from ironhive.adapters.sessions.redis_execution_log import RedisExecutionLog
    from ironhive.adapters.sessions.redis_store import RedisSessionStore
    from ironhive.serve.runtime import open_plugin_tools, runtime_factory

    project = Path.cwd().resolve()
    client = await open_redis(url)
    try:
        store = RedisSessionStore.for_project(client, project)
        log = RedisExecutionLog(client, project_key=project_key_for(project))
        concurrency = options.concurrency or server.max_concurrent_turns
        async with open_plugin_tools(project) as tools:
            # a configuration that cannot work stops the worker now, not at every turn; the provider clients are
            # built once and shared by every turn's agent
            runtimes = runtime_factory(
                config,
                project=project,
                provider=options.provider,
                model=options.model,
                approval_timeout_seconds=options.approval_timeout_seconds,
                plugin_tools=tools,
                session_store=store,
                execution_log=log,
            )
            # one agent per turn on the turn's own store: the finish writes its history with the turn_end
            worker = RedisTurnWorker(
                client,
                store,
                runtimes.open_on,
                keys=TurnKeys(store.keys.prefix),
                concurrency=concurrency,
                visibility_timeout_seconds=float(server.visibility_timeout_seconds),
                event_log_size=server.event_log_size,
            )
            signals = 0

            def on_signal() -> None:
                nonlocal signals
                signals += 1
                worker.stop()
                if signals > 1:
                    asyncio.get_running_loop().create_task(worker.abandon())

            loop = asyncio.get_running_loop()
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(number, on_signal)
            sys.stderr.write(
                f"Worker {worker.consumer} taking turns from {mask_urls(url)} "
                f"({concurrency} at once, project {project})\n"
            )
            sys.stderr.flush()
            try:
                await worker.run()
            finally:
                await runtimes.aclose()
    finally:
        await client.aclose()


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"Error: {message}\n")
    return code
