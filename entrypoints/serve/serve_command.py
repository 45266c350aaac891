"""``ironhive serve``: many sessions over an authenticated HTTP/SSE API (cyclopts only at import; aiohttp on run)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import App, Parameter

if TYPE_CHECKING:
    import socket

    from ironhive.adapters.config.schema import IronHiveConfig, ServerSection
    from ironhive.serve.token import ServerToken

PROVIDER_HELP = "Provider to use (default: the configured one)."


def register(app: App) -> None:
    """Add the ``serve`` command to ``app``."""
    app.command(serve_command, name="serve")


def serve_command(
    *,
    host: Annotated[str | None, Parameter(help="Address to listen on (default: server.host, 127.0.0.1).")] = None,
    port: Annotated[
        int | None, Parameter(help="Port to listen on; 0 picks a free one (default: server.port, 8765).")
    ] = None,
    redis: Annotated[
        str | None, Parameter(help="Redis URL: sessions, events and turns live there; `ironhive worker` runs turns.")
    ] = None,
    allow_remote: Annotated[
        bool,
        Parameter(
            help="Allow a non-loopback --host (needs a configured token: server.token or IRONHIVE_SERVER_TOKEN)."
        ),
    ] = False,
    provider: Annotated[str | None, Parameter(help=PROVIDER_HELP)] = None,
    model: Annotated[str | None, Parameter(name=["-m", "--model"], help="Model to use (or provider/model).")] = None,
    approval_timeout: Annotated[
        float | None,
        Parameter(help="Seconds an approval waits for its answer before it counts as rejected (default: 300)."),
    ] = None,
) -> int:
    """Serve many sessions over an HTTP/SSE API with a bearer token (127.0.0.1:8765 by default).

    The token: server.token or IRONHIVE_SERVER_TOKEN, else generated into ~/.ironhive/server-token (printed once).

    Settings come from the `server` section of ~/.ironhive/config.yaml only, never from a project's file.

    Example: ironhive serve --port 8765, then: curl -X POST -H "Authorization: Bearer $TOKEN" localhost:8765/v1/sessions
    """
    options = ServeOptions(
        host=host,
        port=port,
        redis=redis,
        allow_remote=allow_remote,
        provider=provider,
        model=model,
        approval_timeout_seconds=approval_timeout,
        environ=os.environ,
    )
    return run_serve(options)


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeOptions:
    """The command line of ``ironhive serve`` (flags win over the ``server`` section)."""

    host: str | None
    port: int | None
    redis: str | None
    allow_remote: bool
    provider: str | None
    model: str | None
    approval_timeout_seconds: float | None
    environ: Mapping[str, str]

    def usage_problem(self) -> str | None:
        """What is wrong with the flags on their own, or None (each is a usage error: exit 2)."""
        if self.port is not None and not 0 <= self.port <= 65535:
            return f"--port must be from 0 to 65535, got {self.port}"
        from ironhive.server import approval_timeout_problem

        if (problem := approval_timeout_problem(self.approval_timeout_seconds)) is not None:
            return problem
        if self.host is not None and not self.host.strip():
            return "--host must not be empty"
        if self.redis is not None and not self.redis.strip():
            return "--redis must not be empty"
        return None


def user_server_section(home: Path) -> ServerSection:
    """The ``server`` section of the user's ``~/.ironhive/config.yaml`` only: never a project's, trusted or not (a
    cloned repository must not open ports, change the token, widen origins or redirect turns).

    Raises:
        ConfigurationError: The user's file is malformed or unreadable.
    """
    from ironhive.adapters.config.files import global_config_path
    from ironhive.adapters.config.layers import read_yaml_layer
    from ironhive.adapters.config.loader import clean_layer
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.domain.errors import ConfigurationError

    path = global_config_path(home)
    failures: list[ConfigurationError] = []
    read = read_yaml_layer(path, None, lambda warning: None, failures.append)
    if failures:
        raise failures[0]
    if read is None:
        return IronHiveConfig().server
    layer = clean_layer(read[0], str(path), lambda warning: None, lines=read[2])  # load_configuration warned already
    return IronHiveConfig.model_validate({"server": layer.get("server", {})}).server


def run_serve(options: ServeOptions) -> int:
    """Run ``ironhive serve`` until SIGINT or SIGTERM; returns the exit code (0 after a signal, 1 when it cannot start,
    2 for bad usage)."""
    if (problem := options.usage_problem()) is not None:
        return _fail(problem, 2)
    from ironhive.configuration import load_configuration
    from ironhive.domain.errors import IronHiveError
    from ironhive.log_setup import configure_logging
    from ironhive.providers import select_provider
    from ironhive.serve.security import is_loopback
    from ironhive.serve.token import TOKEN_VARIABLE, chosen_token, resolve_token

    configure_logging(options.environ)
    home = Path.home()
    host, port = options.host or "127.0.0.1", options.port or 0
    try:
        config = load_configuration(options.environ, Path.cwd()).config
        server = user_server_section(home)
        server = server.model_copy(
            update={
                key: value
                for key, value in (("host", options.host), ("port", options.port), ("redis", options.redis))
                if value is not None
            }
        )
        host, port = server.host.strip(), server.port
        if not is_loopback(host):
            if not options.allow_remote:
                return _fail(f"--host {host} is not a loopback address: add --allow-remote to listen on it", 2)
            if chosen_token(server.token, options.environ) is None:
                return _fail(
                    f"--allow-remote needs a configured token (server.token in ~/.ironhive/config.yaml or "
                    f"{TOKEN_VARIABLE}); a generated one is for loopback only",
                    2,
                )
        model = select_provider(options.provider, options.model, config).model
        token = resolve_token(server.token, options.environ, home)
        listener = _listen(host, port)
    except IronHiveError as error:
        return _fail(str(error), 1)
    except OSError as error:
        return _fail(f"Cannot listen on {_url(host, port)}: {error.strerror or error}", 1)
    import asyncio

    try:
        asyncio.run(_serve(options, config, server, model, token, listener, home))
    except IronHiveError as error:
        return _fail(str(error), 1)
    finally:
        listener.close()
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (bound before the app is built, so ``--port 0`` knows its port)."""
    import socket

    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    return socket.create_server((host.strip("[]"), port), family=family, backlog=512, reuse_port=False)


async def _serve(
    options: ServeOptions,
    config: IronHiveConfig,
    server: ServerSection,
    model: str,
    token: ServerToken,
    listener: socket.socket,
    home: Path,
) -> None:
    import asyncio
    import signal

    from aiohttp import web

    from ironhive.serve.app import ApiSettings, build_app
    from ironhive.serve.backends import BackendRequest, open_backend
    from ironhive.serve.security import allowed_hosts

    port = listener.getsockname()[1]
    request = BackendRequest(
        config=config,
        server=server,
        project=Path.cwd(),
        provider=options.provider,
        model=options.model,
        approval_timeout_seconds=options.approval_timeout_seconds,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    async with open_backend(request) as backend:
        settings = ApiSettings(
            model=model,
            token=token.value,
            hosts=allowed_hosts(server.host, port),
            origins=tuple(server.allowed_origins),
            max_request_bytes=server.max_request_bytes,
            heartbeat_seconds=float(server.heartbeat_seconds),
        )
        app = build_app(backend.store, backend.log, backend.hub, settings)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=10.0)
        await runner.setup()
        try:
            await web.SockSite(runner, listener).start()
            if token.source == "generated":
                sys.stderr.write(f"Generated the API token (shown this once; {token.where(home)}): {token.value}\n")
            sys.stderr.write(f"Listening on {_url(server.host, port)} ({token.where(home)})\n")
            sys.stderr.flush()
            await stop.wait()
        finally:
            await runner.cleanup()  # stops taking requests, stops the turns, ends the event streams


def _url(host: str, port: int) -> str:
    name = host.strip().strip("[]")
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"Error: {message}\n")
    return code
