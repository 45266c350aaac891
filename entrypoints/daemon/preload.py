"""What the warm process loads before it serves: the modules a run may import and the state every run would build."""

from __future__ import annotations

import contextlib
import importlib
import os
import ssl

PRELOAD = (
    "ironhive.cli.app",
    "ironhive.cli.one_shot",
    "ironhive.cli.console_settings",
    "ironhive.cli.prompt_input",
    "ironhive.daemon.child",
    "ironhive.cli.render",
    "ironhive.cli.early_local",
    "ironhive.cli.config_commands",
    "ironhive.cli.models_command",
    "ironhive.cli.session_commands",
    "ironhive.cli.doctor",
    "ironhive.agent_factory",
    "ironhive.configuration",
    "ironhive.assembly",
    "ironhive.container",
    "ironhive.providers",
    "ironhive.log_setup",
    "ironhive.lean_imports",
    "ironhive.optional_tools",
    "ironhive.adapters.console_approval",
    "ironhive.adapters.config.loader",
    "ironhive.adapters.config.writer",
    "ironhive.adapters.mcp.console_trust",
    "ironhive.adapters.mcp.provider",
    "ironhive.adapters.sessions.store",
    "ironhive.adapters.sessions.execution_log",
    "ironhive.adapters.skills.loader",
    "ironhive.adapters.skills.tool",
    "ironhive.adapters.tools.provider",
    "ironhive.adapters.web.tools",
    "ironhive.adapters.web.search_tool",
    "ironhive.adapters.web.explore",
    "ironhive.adapters.web.research",
    "pathspec",
    "ironhive.domain.permissions.commands",
    "ironhive.adapters.openai.client",
    "ironhive.adapters.anthropic.client",
    "ironhive.adapters.google.client",
    "openai",
    "openai.resources.chat.chat",
    "openai.resources.chat.completions.completions",
    "openai.resources.chat.completions.messages",
    "openai.resources.models",
    "openai.pagination",
    "openai.lib.streaming.chat",
    "anthropic",
    "anthropic.resources.messages",
    "anthropic.resources.models",
    "google.genai",
    "httpcore2",
    "h11",
    "anyio._backends._asyncio",
    "anyio.streams.tls",
    "truststore",
    "diskcache",
    "sqlite3",
    "concurrent.futures.thread",
    "aiohttp",
    "mcp",
    "rich.console",
    "rich.markdown",
    "rich.live",
    "ssl",
    "asyncio",
)
"""Modules a non-interactive run may import, loaded once here (a missing optional one is skipped). Not the local
model's (llama.cpp loads native code that may start threads; huggingface_hub reads its settings at import)."""


def preload() -> list[str]:
    """Import :data:`PRELOAD`, then build what every run would otherwise build for itself: the CA store, the openai
    SDK's response models and request type hints, OpenAI's current token encoding. None of it depends on a run's
    configuration, and none of it is a thread, a connection or an event loop.

    Returns:
        The modules that could not be imported.
    """
    missing = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    with contextlib.suppress(ImportError, OSError, ssl.SSLError):
        from ironhive.adapters.tls import load_tls_trust

        load_tls_trust()  # the CAs loaded now, not at a run's first handshake: every forked run shares them
    with contextlib.suppress(ImportError):
        from ironhive.adapters.openai.client import prepare_sdk

        prepare_sdk()
    with contextlib.suppress(ImportError, KeyError, RuntimeError):
        from ironhive.adapters.tokens.selection import CURRENT_OPENAI_ENCODING
        from ironhive.adapters.tokens.tiktoken_counter import load_encoding

        load_encoding(CURRENT_OPENAI_ENCODING)  # 0.4 s of CPU per run otherwise; the parsed ranks are shared read-only
    return missing


PARSE_SAMPLES = (("-p", "-", "-o", "json"), ("run", "-p", "-"))
"""Command lines whose parse is prepared (:func:`prepare_parse`): the default command (``-p``) and ``run``."""


def prepare_parse() -> None:
    """Register every command (a direct run registers only those its command line names), then parse
    :data:`PARSE_SAMPLES` once, keeping an unused argument collection for each command's next parse (see
    :mod:`ironhive.cli.prepared_parse`): every process forked from the warm one inherits them, unused. (A spare could
    rehearse the parse too, copying the pages it writes before its request: 2 ms less per run, for 16 ms of CPU.)"""
    with contextlib.suppress(ImportError):
        from ironhive.cli.app import app, register_commands
        from ironhive.cli.prepared_parse import prepare

        register_commands()
        prepare(app, PARSE_SAMPLES)


def thread_count() -> int:
    """The process's OS threads (native ones included)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1
