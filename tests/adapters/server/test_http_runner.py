"""AgentHttpRunner against a loopback agent host: ready, SSE inbox, ordered event delivery, reconnects, approvals."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Literal

import aiohttp
import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.adapters.server.events import to_server_events
from ironhive.adapters.server.hitl_bridge import CONNECTION_CLOSED, HitlBridge
from ironhive.adapters.server.http_runner import (
    MAX_BATCH_EVENTS,
    AgentHttpRunner,
    HostConnectionError,
)
from ironhive.adapters.server.turns import ProcessMessage
from ironhive.domain.agent_loop import AgentLoop
from ironhive.ports.approval import ApprovalRequest, RiskLevel
from ironhive.ports.chat import Usage
from ironhive.protocol.models import (
    DEFAULT_PROTOCOL,
    CancelRequest,
    ContextUpdateRequest,
    FallbackEvent,
    HitlResponseRequest,
    ServerEvent,
    ShutdownRequest,
    TextDeltaEvent,
    UserMessageRequest,
)
from tests.support.agent_host import LoopbackAgentHost
from tests.support.fakes import FakeClock, RecordingTool

SID = "agent-1"
FAST = {"initial_backoff": 0.01, "max_backoff": 0.05}


@pytest.fixture
async def host() -> AsyncIterator[LoopbackAgentHost]:
    async with LoopbackAgentHost() as loopback:
        yield loopback


def runner_for(host: LoopbackAgentHost, process: ProcessMessage, **kwargs: object) -> AgentHttpRunner:
    options = {**FAST, **kwargs}
    return AgentHttpRunner(host.base_url, SID, process, **options)  # type: ignore[arg-type]


def runner_tasks() -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_name().startswith("ironhive-http")]


@contextlib.asynccontextmanager
async def running(runner: AgentHttpRunner) -> AsyncIterator[asyncio.Task[None]]:
    """Run the runner in a task; whatever happens, the task is finished (cancelled if needed) on exit."""
    task = asyncio.create_task(runner.run())
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()
        assert runner_tasks() == []


async def echo(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
    yield TextDeltaEvent(content=f"echo: {message.content}")


def loop_processor(loop: AgentLoop) -> ProcessMessage:
    async def process(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        async for event in to_server_events(loop.run_streaming(message.content)):
            yield event

    return process


def texts(events: list[dict[str, object]]) -> list[object]:
    return [event.get("content", event.get("message", event["type"])) for event in events]


# --- the whole session ------------------------------------------------------------------------------------------------


async def test_full_turn_through_the_real_agent_loop(host: LoopbackAgentHost) -> None:
    tool = RecordingTool("echo")
    client = ScriptedChatClient(
        [
            ScriptStep(
                tool_calls=(ScriptedToolCall(name="echo", arguments={"value": "x"}, call_id="call_1"),),
                usage=Usage(input_tokens=10, output_tokens=3),
            ),
            ScriptStep(text="Hello there", usage=Usage(input_tokens=20, output_tokens=4)),
        ]
    )
    loop = AgentLoop(client, clock=FakeClock(step=0.001), tools=[tool])
    async with running(runner_for(host, loop_processor(loop))) as task:
        await host.send(SID, UserMessageRequest(content="Hi"))
        await host.wait_for_turn_ends(SID, 1)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    record = host.agent(SID)
    assert record.ready_bodies == [{"session_id": SID}]
    assert record.events == [
        {"type": "tool_start", "tool": "echo", "input": {"value": "x"}, "call_id": "call_1"},
        {"type": "tool_end", "tool": "echo", "success": True, "output": "echo: {'value': 'x'}", "call_id": "call_1"},
        {"type": "text_delta", "content": "Hello "},
        {"type": "text_delta", "content": "there"},
        {"type": "turn_end", "input_tokens": 30, "output_tokens": 7, "total_tokens": 37},
    ]
    assert tool.calls == [{"value": "x"}]
    assert client.requests[0].messages[-1].text == "Hi"
    assert record.inbox_last_event_ids == [None]


async def test_shutdown_finishes_the_received_turns_and_returns_after_delivering_every_event(
    host: LoopbackAgentHost,
) -> None:
    async def slow(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        await asyncio.sleep(0.05)
        yield TextDeltaEvent(content=message.content)

    for content in ("a", "b"):
        await host.send(SID, UserMessageRequest(content=content))
    await host.send(SID, ShutdownRequest())
    await host.send(SID, UserMessageRequest(content="after shutdown"))
    host.fail_events(SID, 2, status=503)
    async with running(runner_for(host, slow)) as task:
        await asyncio.wait_for(task, 5)
        task.result()
        # run() returned: everything is already delivered, nothing to wait for
        assert texts(host.agent(SID).events) == ["a", "turn_end", "b", "turn_end"]


async def test_a_session_id_is_quoted_into_the_urls(host: LoopbackAgentHost) -> None:
    runner = AgentHttpRunner(host.base_url + "/", "a b/c", echo, **FAST)  # type: ignore[arg-type]
    await host.send("a b/c", ShutdownRequest())
    async with running(runner) as task:
        await asyncio.wait_for(task, 5)
    assert host.agent("a b/c").ready_bodies == [{"session_id": "a b/c"}]


async def test_cancel_and_context_update_arrive_through_the_inbox(host: LoopbackAgentHost) -> None:
    updates: list[ContextUpdateRequest] = []

    async def process(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        yield TextDeltaEvent(content=message.content)
        if message.content.endswith("slow"):
            await asyncio.sleep(30)
            yield TextDeltaEvent(content="never")

    async with running(runner_for(host, process, on_context_update=updates.append)) as task:
        await host.send(SID, UserMessageRequest(content="slow"))
        await host.wait_for_events(SID, lambda events: len(events) == 1)
        await host.send(SID, CancelRequest())
        await host.wait_for_turn_ends(SID, 1)
        await host.send(SID, ContextUpdateRequest(working_path="/work/p", selected_items=["a.py"]))
        await host.send(SID, UserMessageRequest(content="hello"))
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert texts(host.agent(SID).events) == ["slow", "turn_end", "[WorkingPath: /work/p]\n\nhello", "turn_end"]
    assert updates == [ContextUpdateRequest(working_path="/work/p", selected_items=["a.py"])]


# --- approvals --------------------------------------------------------------------------------------------------------


def approval(command: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="execute_command",
        arguments={"command": command},
        call_id="call_7",
        level=RiskLevel.CRITICAL,
        reason=f"Shell command: {command}",
        prompt="Allow executing this command?",
    )


async def test_approvals_go_out_as_hitl_requests_and_come_back_through_the_inbox(host: LoopbackAgentHost) -> None:
    bridge = HitlBridge(timeout_seconds=5)

    async def asking(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        yield TextDeltaEvent(content="asking")
        decision = await bridge.request_approval(approval(message.content))
        yield TextDeltaEvent(
            content=f"approved={decision.approved} reason={decision.reason} args={decision.modified_arguments}"
        )

    def hitl_requests(events: list[dict[str, object]]) -> list[dict[str, object]]:
        return [event for event in events if event["type"] == "hitl_request"]

    async with running(runner_for(host, asking, hitl_bridge=bridge)) as task:
        await host.send(SID, UserMessageRequest(content="rm -rf build"))
        events = await host.wait_for_events(SID, lambda events: len(hitl_requests(events)) == 1)
        first = hitl_requests(events)[0]
        assert first["action"] == "Shell command: rm -rf build"
        assert first["target"] == "rm -rf build"
        assert first["call_id"] == "call_7"
        assert first["level"] == "critical"
        await host.send(
            SID, HitlResponseRequest(approved=True, id=str(first["id"]), modified_arguments={"command": "ls"})
        )
        await host.wait_for_turn_ends(SID, 1)
        await host.send(SID, UserMessageRequest(content="reboot"))
        await host.wait_for_events(SID, lambda events: len(hitl_requests(events)) == 2)
        await host.send(SID, HitlResponseRequest(approved=False, reason="not on prod"))  # no id: the only one waiting
        await host.wait_for_turn_ends(SID, 2)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert texts(host.agent(SID).events) == [
        "asking",
        "hitl_request",
        "approved=True reason=None args={'command': 'ls'}",
        "turn_end",
        "asking",
        "hitl_request",
        "approved=False reason=not on prod args=None",
        "turn_end",
    ]
    bridge.attach(lambda event: asyncio.sleep(0))  # the stopped runner detached itself


async def test_shutdown_rejects_approvals_nobody_can_answer_any_more(host: LoopbackAgentHost) -> None:
    bridge = HitlBridge(timeout_seconds=30)

    async def asking(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        decision = await bridge.request_approval(approval("ls"))
        yield TextDeltaEvent(content=f"{decision.approved}: {decision.reason}")

    async with running(runner_for(host, asking, hitl_bridge=bridge)) as task:
        await host.send(SID, UserMessageRequest(content="go"))
        await host.wait_for_events(SID, lambda events: [e["type"] for e in events] == ["hitl_request"])
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert texts(host.agent(SID).events) == ["hitl_request", f"False: {CONNECTION_CLOSED}", "turn_end"]


async def test_a_failing_runner_cancels_the_turn_ends_its_approval_wait_and_detaches(
    host: LoopbackAgentHost,
) -> None:
    bridge = HitlBridge(timeout_seconds=30)
    outcomes: list[str | None] = []

    async def asking(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        try:
            decision = await bridge.request_approval(approval("ls"))
            outcomes.append(decision.reason)
            await asyncio.sleep(30)
            yield TextDeltaEvent(content="never")
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            raise

    async with running(runner_for(host, asking, hitl_bridge=bridge)) as task:
        await host.send(SID, UserMessageRequest(content="go"))
        await host.send(SID, UserMessageRequest(content="queued, never run"))
        await host.wait_for_events(SID, lambda events: [e["type"] for e in events] == ["hitl_request"])
        host.refuse_inbox(SID, 403)
        await host.drop_inbox(SID)
        with pytest.raises(HostConnectionError, match="HTTP 403") as failure:
            await asyncio.wait_for(task, 5)
    assert failure.value.status == 403
    assert outcomes == ["cancelled"]  # the cancel wins over the rejection that detaching gave the wait
    assert bridge.pending_ids == ()
    bridge.attach(lambda event: asyncio.sleep(0))


# --- publish_event and batches ----------------------------------------------------------------------------------------


async def test_published_events_keep_their_place_among_the_turn_events(host: LoopbackAgentHost) -> None:
    runners: list[AgentHttpRunner] = []
    notice = FallbackEvent(kind="fallback", provider_index=1, total_providers=2, category="rate_limit", message="m")

    async def process(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        yield TextDeltaEvent(content="before")
        await runners[0].publish_event(notice)
        yield TextDeltaEvent(content="after")

    runners.append(runner_for(host, process))
    async with running(runners[0]) as task:
        await host.send(SID, UserMessageRequest(content="go"))
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert texts(host.agent(SID).events) == ["before", "m", "after", "turn_end"]
    with pytest.raises(RuntimeError, match="stopped"):
        await runners[0].publish_event(notice)


async def test_queued_events_go_one_object_per_post_by_default_as_the_original_sent_them(
    host: LoopbackAgentHost,
) -> None:
    runner = runner_for(host, echo)
    for content in ("a", "b", "c"):
        await runner.publish_event(TextDeltaEvent(content=content))  # all waiting when the sender starts
    await host.send(SID, ShutdownRequest())
    async with running(runner) as task:
        await asyncio.wait_for(task, 5)
    assert host.agent(SID).bodies == [{"type": "text_delta", "content": c} for c in ("a", "b", "c")]
    assert len(host.agent(SID).event_posts) == 3


@pytest.mark.parametrize("size", [0, MAX_BATCH_EVENTS + 1])
def test_a_batch_size_out_of_range_is_refused(host: LoopbackAgentHost, size: int) -> None:
    with pytest.raises(ValueError, match="max_batch_events"):
        runner_for(host, echo, max_batch_events=size)


async def test_with_batches_asked_for_queued_events_go_as_one_array_and_a_lone_event_as_an_object(
    host: LoopbackAgentHost,
) -> None:
    runner = runner_for(host, echo, max_batch_events=MAX_BATCH_EVENTS)
    for content in ("a", "b", "c"):
        await runner.publish_event(TextDeltaEvent(content=content))  # queued before run(): sent after ready
    async with running(runner) as task:
        await host.wait_for_events(SID, lambda events: len(events) == 3)
        await runner.publish_event(TextDeltaEvent(content="d"))
        await host.wait_for_events(SID, lambda events: len(events) == 4)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert host.agent(SID).bodies == [
        [{"type": "text_delta", "content": c} for c in ("a", "b", "c")],
        {"type": "text_delta", "content": "d"},
    ]


async def test_an_unregistered_event_type_is_refused_at_publish(host: LoopbackAgentHost) -> None:
    class CustomEvent(ServerEvent):
        type: Literal["custom"] = "custom"

    with pytest.raises(ValueError, match="not registered"):
        await runner_for(host, echo).publish_event(CustomEvent())


# --- event delivery failures ------------------------------------------------------------------------------------------


async def test_event_posts_failing_with_503_are_retried_with_the_same_body_nothing_lost(
    host: LoopbackAgentHost,
) -> None:
    host.fail_events(SID, 2, status=503)
    client = ScriptedChatClient([ScriptStep(text="one two three")])
    loop = AgentLoop(client, clock=FakeClock(step=0.001))
    async with running(runner_for(host, loop_processor(loop))) as task:
        await host.send(SID, UserMessageRequest(content="go"))
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    record = host.agent(SID)
    posts = record.event_posts
    assert [post.status for post in posts[:3]] == [503, 503, 204]
    assert posts[0].body == posts[1].body == posts[2].body
    assert texts(record.events) == ["one ", "two ", "three", "turn_end"]


async def test_retry_after_on_429_is_honoured(host: LoopbackAgentHost) -> None:
    host.fail_events(SID, 1, status=429, headers={"Retry-After": "0.3"})
    runner = runner_for(host, echo)
    await runner.publish_event(TextDeltaEvent(content="x"))
    await host.send(SID, ShutdownRequest())
    async with running(runner) as task:
        await asyncio.wait_for(task, 5)
    first, second = host.agent(SID).event_posts
    assert (first.status, second.status) == (429, 204)
    assert second.at - first.at >= 0.28


async def test_a_refused_batch_is_resent_event_by_event(host: LoopbackAgentHost) -> None:
    host.fail_events(SID, 1, status=400)
    runner = runner_for(host, echo, max_batch_events=8)
    for content in ("a", "b", "c"):
        await runner.publish_event(TextDeltaEvent(content=content))
    await host.send(SID, ShutdownRequest())
    async with running(runner) as task:
        await asyncio.wait_for(task, 5)
    record = host.agent(SID)
    assert [post.status for post in record.event_posts] == [400, 204, 204, 204]
    assert record.bodies == [{"type": "text_delta", "content": c} for c in ("a", "b", "c")]


async def test_an_event_refused_on_its_own_is_dropped_and_logged(
    host: LoopbackAgentHost, caplog: pytest.LogCaptureFixture
) -> None:
    host.fail_events(SID, 1, status=422)
    runner = runner_for(host, echo)
    async with running(runner) as task:
        await runner.publish_event(TextDeltaEvent(content="refused"))
        await host.wait_until(lambda: len(host.agent(SID).event_posts) == 1)
        await runner.publish_event(TextDeltaEvent(content="kept"))
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert texts(host.agent(SID).events) == ["kept"]
    assert any("text_delta event (HTTP 422); the event is dropped" in r.getMessage() for r in caplog.records)


async def test_event_delivery_gives_up_after_the_attempt_limit(
    host: LoopbackAgentHost, caplog: pytest.LogCaptureFixture
) -> None:
    host.fail_events(SID, 10, status=500)
    runner = runner_for(host, echo, max_reconnect_attempts=2)
    await runner.publish_event(TextDeltaEvent(content="x"))
    async with running(runner) as task:
        with pytest.raises(HostConnectionError, match=r"2 retry attempt\(s\) failed \(last: HTTP 500\)"):
            await asyncio.wait_for(task, 5)
    assert len(host.agent(SID).event_posts) == 3
    assert any("1 event(s) of session agent-1 were not delivered" in r.getMessage() for r in caplog.records)


# --- ready and the inbox ----------------------------------------------------------------------------------------------


async def test_ready_refused_fails_the_runner_without_opening_the_inbox(host: LoopbackAgentHost) -> None:
    host.fail_ready(SID, 503)
    with pytest.raises(HostConnectionError, match="HTTP 503 to ready") as failure:
        await asyncio.wait_for(runner_for(host, echo).run(), 5)
    assert failure.value.status == 503
    assert host.agent(SID).ready_bodies == [{"session_id": SID}]
    assert host.agent(SID).inbox_last_event_ids == []


async def test_an_unreachable_host_fails_the_runner() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runner = AgentHttpRunner(f"http://127.0.0.1:{port}", SID, echo, **FAST)  # type: ignore[arg-type]
    with pytest.raises(HostConnectionError, match="Cannot reach the host"):
        await asyncio.wait_for(runner.run(), 5)


async def test_404_on_the_inbox_fails_at_once(host: LoopbackAgentHost) -> None:
    host.refuse_inbox(SID, 404)
    async with running(runner_for(host, echo)) as task:
        with pytest.raises(HostConnectionError, match="refused the inbox of session agent-1 with HTTP 404") as failure:
            await asyncio.wait_for(task, 5)
    assert failure.value.status == 404
    assert host.agent(SID).inbox_last_event_ids == [None]


@pytest.mark.parametrize("abrupt", [False, True], ids=["stream-ended", "connection-reset"])
async def test_a_host_restart_reconnects_with_the_last_event_id(host: LoopbackAgentHost, abrupt: bool) -> None:
    runner = runner_for(host, echo)
    async with running(runner) as task:
        await host.send(SID, UserMessageRequest(content="one"))
        await host.wait_for_turn_ends(SID, 1)
        await host.drop_inbox(SID, refuse=2, status=502, abrupt=abrupt)
        await host.send(SID, UserMessageRequest(content="two"))
        await host.wait_for_turn_ends(SID, 2)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    record = host.agent(SID)
    assert record.inbox_last_event_ids == [None, "1", "1", "1"]
    assert runner.last_event_id == "3"
    assert texts(record.events) == ["echo: one", "turn_end", "echo: two", "turn_end"]


async def test_turns_go_on_while_the_inbox_is_down(host: LoopbackAgentHost) -> None:
    release = asyncio.Event()

    async def waiting(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        await release.wait()
        yield TextDeltaEvent(content="done")

    async with running(runner_for(host, waiting, max_reconnect_attempts=None)) as task:
        await host.send(SID, UserMessageRequest(content="go"))
        await host.wait_until(lambda: host.agent(SID).next_unsent == 1)
        host.refuse_inbox(SID, 503)
        await host.drop_inbox(SID)
        await host.wait_until(lambda: len(host.agent(SID).inbox_last_event_ids) >= 3)
        release.set()
        events = await host.wait_for_turn_ends(SID, 1)
        assert texts(events) == ["done", "turn_end"]
        host.refuse_inbox(SID, None)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)


@pytest.mark.parametrize("how", ["refused", "stream-ends"])
async def test_the_runner_fails_after_the_reconnect_limit(host: LoopbackAgentHost, how: str) -> None:
    if how == "refused":
        host.refuse_inbox(SID, 503)
    else:
        host.end_streams_at_once(SID)
    async with running(runner_for(host, echo, max_reconnect_attempts=2)) as task:
        with pytest.raises(HostConnectionError, match=r"2 reconnect attempt\(s\) failed"):
            await asyncio.wait_for(task, 5)
    assert len(host.agent(SID).inbox_last_event_ids) == 3


async def test_a_message_resets_the_reconnect_count(host: LoopbackAgentHost) -> None:
    async with running(runner_for(host, echo, max_reconnect_attempts=1)) as task:
        for turn in range(1, 4):
            await host.send(SID, UserMessageRequest(content=str(turn)))
            await host.wait_for_turn_ends(SID, turn)
            await host.drop_inbox(SID)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert len(host.agent(SID).inbox_last_event_ids) == 4


async def test_zero_reconnect_attempts_fails_on_the_first_loss(host: LoopbackAgentHost) -> None:
    async with running(runner_for(host, echo, max_reconnect_attempts=0)) as task:
        await host.wait_until(lambda: host.agent(SID).open_streams == 1)
        await host.drop_inbox(SID)
        with pytest.raises(HostConnectionError, match="reconnecting is disabled"):
            await asyncio.wait_for(task, 5)


async def test_a_retry_field_sets_the_reconnect_delay(host: LoopbackAgentHost) -> None:
    runner = runner_for(host, echo, initial_backoff=20.0, max_backoff=30.0)
    await host.send_raw(SID, "retry: 10\n\n")
    async with running(runner) as task:
        await host.wait_until(lambda: host.agent(SID).next_unsent == 1)
        await host.drop_inbox(SID)
        await host.wait_until(lambda: len(host.agent(SID).inbox_last_event_ids) == 2, within=3)
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)


async def test_unreadable_data_is_reported_and_reading_goes_on(host: LoopbackAgentHost) -> None:
    await host.send_raw(SID, "data: {not json\n\n")
    await host.send_raw(SID, 'data: {"type":"dance"}\n\n')
    await host.send_raw(SID, "data:\n\n")  # an empty keep-alive: skipped silently
    await host.send(SID, '{"type":"user_message",\n"content":"multi-line"}')  # two data lines joined with \n
    await host.send_raw(
        SID, 'event: request\r\n: a comment\r\nid: 42\r\ndata:{"type":"user_message","content":"crlf"}\r\n\r\n'
    )
    await host.send(SID, ShutdownRequest())
    async with running(runner_for(host, echo)) as task:
        await asyncio.wait_for(task, 5)
    events = texts(host.agent(SID).events)
    assert str(events[0]).startswith("Unreadable request skipped: invalid JSON: ")
    assert events[1:] == [
        "Unreadable request skipped: unknown request type 'dance'",
        "echo: multi-line",
        "turn_end",
        "echo: crlf",
        "turn_end",
    ]


async def test_an_overlong_request_is_reported(host: LoopbackAgentHost) -> None:
    protocol = DEFAULT_PROTOCOL.with_max_line_bytes(100)
    await host.send(SID, UserMessageRequest(content="x" * 200))
    await host.send(SID, UserMessageRequest(content="short"))
    await host.send(SID, ShutdownRequest())
    async with running(runner_for(host, echo, protocol=protocol)) as task:
        await asyncio.wait_for(task, 5)
    assert texts(host.agent(SID).events) == [
        "Unreadable request skipped: the request is longer than 100 bytes",
        "echo: short",
        "turn_end",
    ]


async def test_an_event_far_over_the_limit_ends_the_runner_with_a_clear_error(host: LoopbackAgentHost) -> None:
    protocol = DEFAULT_PROTOCOL.with_max_line_bytes(100)
    await host.send(SID, UserMessageRequest(content="x" * 1000))
    async with running(runner_for(host, echo, protocol=protocol)) as task:
        with pytest.raises(HostConnectionError, match="cannot be read past an event of more than 400 bytes"):
            await asyncio.wait_for(task, 5)
    assert host.agent(SID).events == []


async def test_the_last_event_id_outlives_a_connection_whose_events_carry_none(host: LoopbackAgentHost) -> None:
    runner = runner_for(host, echo)
    async with running(runner) as task:
        await host.send(SID, UserMessageRequest(content="one"))  # id 1
        await host.wait_for_turn_ends(SID, 1)
        await host.drop_inbox(SID)
        await host.wait_until(lambda: host.agent(SID).open_streams == 1)
        await host.send_raw(SID, 'data: {"type":"user_message","content":"two"}\n\n')  # no id
        await host.wait_for_turn_ends(SID, 2)
        assert runner.last_event_id == "1"
        await host.send(SID, UserMessageRequest(content="three"))  # id 2
        await host.wait_for_turn_ends(SID, 3)
        assert runner.last_event_id == "2"
        # An empty id after this connection sent one clears the id.
        await host.send_raw(SID, 'id\ndata: {"type":"user_message","content":"four"}\n\n')
        await host.wait_for_turn_ends(SID, 4)
        assert runner.last_event_id == ""
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(task, 5)
    assert host.agent(SID).inbox_last_event_ids[:2] == [None, "1"]


# --- lifecycle --------------------------------------------------------------------------------------------------------


async def test_cancelling_run_cancels_the_turn_and_leaks_nothing(host: LoopbackAgentHost) -> None:
    started = asyncio.Event()
    outcome: list[str] = []

    async def hanging(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        yield TextDeltaEvent(content="never")

    async with running(runner_for(host, hanging)) as task:
        await host.send(SID, UserMessageRequest(content="go"))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        await asyncio.wait({task})
        assert task.cancelled()
    assert outcome == ["cancelled"]


async def test_a_given_session_is_used_and_left_open(host: LoopbackAgentHost) -> None:
    async with aiohttp.ClientSession() as session:
        runner = AgentHttpRunner(host.base_url, SID, echo, session=session, **FAST)  # type: ignore[arg-type]
        await host.send(SID, ShutdownRequest())
        await asyncio.wait_for(runner.run(), 5)
        assert not session.closed
        with pytest.raises(RuntimeError, match="only once"):
            await runner.run()


async def test_a_bridge_attached_elsewhere_fails_the_start_cleanly(host: LoopbackAgentHost) -> None:
    bridge = HitlBridge()
    bridge.attach(lambda event: asyncio.sleep(0))
    async with running(runner_for(host, echo, hitl_bridge=bridge)) as task:
        with pytest.raises(RuntimeError, match="already attached"):
            await asyncio.wait_for(task, 5)


@pytest.mark.parametrize(
    ("url", "session_id", "options"),
    [
        ("localhost:5100", SID, {}),
        ("ftp://host", SID, {}),
        ("http://host", "", {}),
        ("http://host", SID, {"max_reconnect_attempts": -1}),
        ("http://host", SID, {"initial_backoff": 0}),
        ("http://host", SID, {"initial_backoff": 5, "max_backoff": 1}),
    ],
)
def test_bad_arguments_are_refused(url: str, session_id: str, options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        AgentHttpRunner(url, session_id, echo, **options)  # type: ignore[arg-type]
