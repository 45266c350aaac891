"""A minimal agent host for ``ironhive run --http``: type a prompt, watch the turn, answer the agent's approvals.

Start it with ``python host.py`` (port 5100; ``--port N`` for another), then in the project folder:
``ironhive run --http http://127.0.0.1:5100``. When ``IRONHIVE_HOST_TOKEN`` is set, the host refuses every call that
does not carry ``Authorization: Bearer <that token>`` (and ``ironhive run --http`` sends it when it is set there too).
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import os
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

Json = dict[str, Any]


class AgentHost:
    """The three endpoints an agent speaks: ``ready``, the SSE ``inbox`` it reads requests from, and ``events``.

    Args:
        token: The bearer token every call must carry; None accepts any call.
    """

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.ready: asyncio.Queue[str] = asyncio.Queue()  # agent ids, as they announce themselves
        self.events: asyncio.Queue[Json] = asyncio.Queue()  # every event of every agent, in order
        self._inboxes: dict[str, asyncio.Queue[Json]] = {}

    def app(self) -> web.Application:
        """The aiohttp application serving ``/api/agent/{id}/ready``, ``/inbox`` and ``/events``."""
        app = web.Application(middlewares=[self._authorize])
        app.router.add_post("/api/agent/{id}/ready", self._ready)
        app.router.add_get("/api/agent/{id}/inbox", self._inbox)
        app.router.add_post("/api/agent/{id}/events", self._events)
        return app

    async def send(self, agent_id: str, request: Json) -> None:
        """Queue a request (``user_message``, ``hitl_response``, ``cancel``, ``shutdown``...) for an agent."""
        await self._queue(agent_id).put(request)

    def _queue(self, agent_id: str) -> asyncio.Queue[Json]:
        return self._inboxes.setdefault(agent_id, asyncio.Queue())

    @web.middleware
    async def _authorize(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.headers.get("Authorization", "")
        if self.token and not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            raise web.HTTPUnauthorized()
        return await handler(request)

    async def _ready(self, request: web.Request) -> web.Response:
        await self.ready.put(request.match_info["id"])
        return web.json_response({"ok": True})

    async def _inbox(self, request: web.Request) -> web.StreamResponse:
        queue = self._queue(request.match_info["id"])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        while True:  # one request per SSE event; the stream ends after shutdown
            message = await queue.get()
            await response.write(f"data: {json.dumps(message)}\n\n".encode())
            if message["type"] == "shutdown":
                return response

    async def _events(self, request: web.Request) -> web.Response:
        body = await request.json()  # one event, or a JSON array of several
        for event in body if isinstance(body, list) else [body]:
            await self.events.put(event)
        return web.Response(status=204)


async def chat(host: AgentHost) -> None:
    """Wait for an agent, then send each typed prompt and print its turn; an empty line shuts the agent down."""
    agent_id = await host.ready.get()
    print(f"Agent {agent_id} is ready.")
    while prompt := (await asyncio.to_thread(input, "> ")).strip():
        await host.send(agent_id, {"type": "user_message", "content": prompt})
        while (event := await host.events.get())["type"] != "turn_end":
            if event["type"] == "text_delta":
                print(event["content"], end="", flush=True)
            elif event["type"] in ("tool_end", "error"):
                print(f"\n[{event['type']}] {event.get('output', event.get('message'))}")
            elif event["type"] == "hitl_request":
                answer = await asyncio.to_thread(input, f"\nAllow {event['action']}? [y/N] ")
                await host.send(agent_id, {"type": "hitl_response", "id": event["id"], "approved": answer == "y"})
        print()
    await host.send(agent_id, {"type": "shutdown"})


async def main(port: int) -> None:
    """Serve on 127.0.0.1:``port`` and chat with the first agent that announces itself."""
    host = AgentHost(os.environ.get("IRONHIVE_HOST_TOKEN"))
    runner = web.AppRunner(host.app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print(f"Waiting for: ironhive run --http http://127.0.0.1:{port}")
    try:
        await chat(host)
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A minimal agent host for ironhive run --http.")
    parser.add_argument("--port", type=int, default=5100)
    asyncio.run(main(parser.parse_args().port))
