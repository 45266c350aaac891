"""Runs ``ironhive acp``: the ACP agent on stdin/stdout until the editor closes the connection."""

from __future__ import annotations

import asyncio
from typing import cast

from ironhive.acp.session import SessionOptions

STREAM_LIMIT = 50 * 1024 * 1024
"""The longest message read (the SDK's own default: prompts may embed whole files)."""


async def serve_acp(options: SessionOptions) -> None:
    """Serve the editor on stdio; every session ends (recorded as completed) when the connection closes."""
    from acp import Agent
    from acp.agent.connection import AgentSideConnection
    from acp.stdio import stdio_streams

    from ironhive.acp.agent import IronHiveAcpAgent
    from ironhive.acp.transport import CheckedStdioTransport

    reader, writer = await stdio_streams(limit=STREAM_LIMIT)
    agent = IronHiveAcpAgent(options)
    # The SDK routes only the methods an agent has (the others answer "method not found"): a partial Agent is valid.
    handler = cast("Agent", agent)
    connection = AgentSideConnection(handler, CheckedStdioTransport(reader, writer), listening=False)
    try:
        await connection.listen()
    finally:
        await agent.close()  # a pending permission request was rejected by the closed connection
        await asyncio.shield(connection.close())


def run_acp(options: SessionOptions) -> int:
    """Run ``ironhive acp``; returns the exit code (0 when the editor closed the connection, 130 on Ctrl+C)."""
    from ironhive.log_setup import configure_logging

    configure_logging(options.environ)
    try:
        asyncio.run(serve_acp(options))
    except KeyboardInterrupt:
        return 130
    return 0
