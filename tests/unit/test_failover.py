"""Provider failover: retries with backoff honouring Retry-After, switching providers, and never after output began."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ContextOverflowError, ProviderError
from ironhive.domain.failover import ChainedProvider, FailoverChatClient, RetryPolicy, error_category
from ironhive.domain.turn import FallbackChunk, TextDelta
from ironhive.ports.chat import ChatMessage, ChatOptions, ChatUpdate, Role
from tests.support.fakes import FakeClock

RATE_LIMITED = ProviderError("rate limited", status=429, retryable=True, retry_after=7.0)
SERVER_ERROR = ProviderError("boom", status=500, retryable=True)
UNAUTHORIZED = ProviderError("bad key", status=401)
MESSAGES = [ChatMessage.of_text(Role.USER, "hi")]


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def chain(
    *clients: ScriptedChatClient, retries: int = 2, windows: Sequence[int | None] = ()
) -> tuple[FailoverChatClient, Sleeps]:
    sleeps = Sleeps()
    providers = [
        ChainedProvider(name=f"p{index}", client=client, window=windows[index] if index < len(windows) else None)
        for index, client in enumerate(clients)
    ]
    client = FailoverChatClient(
        providers,
        policy=RetryPolicy(max_retries=retries, initial_backoff=1.0, max_backoff=30.0),
        count_tokens=lambda messages: sum(len(m.text) for m in messages),
        sleep=sleeps,
    )
    return client, sleeps


async def stream(client: FailoverChatClient) -> list[ChatUpdate]:
    return [update async for update in client.get_streaming_response(MESSAGES, ChatOptions())]


async def test_rate_limit_twice_then_success_honours_retry_after() -> None:
    primary = ScriptedChatClient(
        [ScriptStep(error=RATE_LIMITED), ScriptStep(error=SERVER_ERROR), ScriptStep(text="ok")]
    )
    client, sleeps = chain(primary)
    updates = await stream(client)
    notices = [u.fallback for u in updates if u.fallback]
    assert [(n.kind, n.category, n.attempt, n.max_attempts) for n in notices] == [
        ("retry", "rate_limit", 1, 3),
        ("retry", "server", 2, 3),
    ]
    assert sleeps.delays == [7.0, 2.0]
    assert "".join(u.text_delta for u in updates) == "ok"


async def test_server_error_on_the_first_provider_then_the_second_answers() -> None:
    first = ScriptedChatClient([ScriptStep(error=SERVER_ERROR)] * 3)
    second = ScriptedChatClient([ScriptStep(text="from second")])
    client, sleeps = chain(first, second)
    updates = await stream(client)
    notices = [u.fallback for u in updates if u.fallback]
    assert [(n.kind, n.provider_index, n.total_providers) for n in notices] == [
        ("retry", 0, 2),
        ("retry", 0, 2),
        ("fallback", 0, 2),
    ]
    assert len(first.requests) == 3 and len(second.requests) == 1
    assert sleeps.delays == [1.0, 2.0]


async def test_auth_error_skips_retries() -> None:
    first = ScriptedChatClient([ScriptStep(error=UNAUTHORIZED)])
    second = ScriptedChatClient([ScriptStep(text="ok")])
    client, sleeps = chain(first, second)
    updates = await stream(client)
    [notice] = [u.fallback for u in updates if u.fallback]
    assert (notice.kind, notice.category) == ("fallback", "auth")
    assert sleeps.delays == []


async def test_exhausted_chain_raises_the_last_error_after_an_exhausted_notice() -> None:
    client, _ = chain(
        ScriptedChatClient([ScriptStep(error=UNAUTHORIZED)]), ScriptedChatClient([ScriptStep(error=UNAUTHORIZED)])
    )
    updates: list[ChatUpdate] = []
    with pytest.raises(ProviderError, match="bad key"):
        async for update in client.get_streaming_response(MESSAGES, ChatOptions()):
            updates.append(update)
    assert [u.fallback.kind for u in updates if u.fallback] == ["fallback", "exhausted"]


async def test_a_stream_cut_after_output_started_is_not_failed_over() -> None:
    class CutStream:
        async def get_response(self, messages, options):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        async def get_streaming_response(self, messages, options) -> AsyncIterator[ChatUpdate]:  # type: ignore[no-untyped-def]
            yield ChatUpdate(text_delta="partial ")
            raise SERVER_ERROR

    second = ScriptedChatClient([ScriptStep(text="never")])
    client = FailoverChatClient(
        [ChainedProvider(name="a", client=CutStream()), ChainedProvider(name="b", client=second)]
    )
    seen: list[str] = []
    with pytest.raises(ProviderError, match="boom"):
        async for update in client.get_streaming_response(MESSAGES, ChatOptions()):
            seen.append(update.text_delta)
    assert seen == ["partial "]
    assert second.requests == []


async def test_context_overflow_is_not_failed_over() -> None:
    second = ScriptedChatClient([ScriptStep(text="never")])
    client, _ = chain(ScriptedChatClient([ScriptStep(error=ContextOverflowError("too long", window=10))]), second)
    with pytest.raises(ContextOverflowError):
        await client.get_response(MESSAGES, ChatOptions())
    assert second.requests == []


async def test_non_streaming_response_carries_its_notices() -> None:
    client, _ = chain(ScriptedChatClient([ScriptStep(error=SERVER_ERROR), ScriptStep(text="ok")]))
    response = await client.get_response(MESSAGES, ChatOptions())
    assert response.message.text == "ok"
    assert [n.kind for n in response.notices] == ["retry"]


async def test_a_provider_whose_window_is_too_small_is_never_sent_the_request() -> None:
    small = ScriptedChatClient([ScriptStep(text="never")])
    large = ScriptedChatClient([ScriptStep(text="ok")])
    client, _ = chain(ScriptedChatClient([ScriptStep(error=UNAUTHORIZED)]), small, large, windows=[None, 1, None])
    response = await client.get_response(MESSAGES, ChatOptions())
    assert small.requests == []
    assert response.message.text == "ok"
    assert [n.category for n in response.notices] == ["auth", "context_limit"]


async def test_the_first_providers_model_is_not_sent_to_the_others() -> None:
    first = ScriptedChatClient([ScriptStep(error=UNAUTHORIZED)])
    second = ScriptedChatClient([ScriptStep(text="ok")])
    client, _ = chain(first, second)
    await client.get_response(MESSAGES, ChatOptions(model="gpt-x"))
    assert first.requests[0].options.model == "gpt-x"
    assert second.requests[0].options.model is None


@pytest.mark.parametrize(
    ("error", "category"),
    [
        (ProviderError("x", status=401), "auth"),
        (ProviderError("x", status=403), "auth"),
        (ProviderError("x", status=429, retryable=True), "rate_limit"),
        (ProviderError("x", status=503, retryable=True), "overloaded"),
        (ProviderError("x", status=529, retryable=True), "overloaded"),
        (ProviderError("x", status=502, retryable=True), "server"),
        (ProviderError("x", status=408, retryable=True), "timeout"),
        (ProviderError("x", status=400), "bad_request"),
        (ProviderError("x", retryable=True), "network"),
        (ProviderError("x"), "unknown"),
    ],
)
def test_error_categories(error: ProviderError, category: str) -> None:
    assert error_category(error) == category


async def test_the_loop_streams_fallback_chunks_before_the_answer() -> None:
    client, _ = chain(ScriptedChatClient([ScriptStep(error=SERVER_ERROR), ScriptStep(text="fine")]))
    chunks = [chunk async for chunk in AgentLoop(client, clock=FakeClock()).run_streaming("go")]
    assert isinstance(chunks[0], FallbackChunk) and chunks[0].notice.kind == "retry"
    assert isinstance(chunks[1], TextDelta)


async def test_a_retry_notice_is_streamed_before_the_wait_and_states_its_length() -> None:
    primary = ScriptedChatClient([ScriptStep(error=RATE_LIMITED), ScriptStep(text="ok")])
    client, sleeps = chain(primary)
    seen: list[tuple[str, int]] = []
    async for update in client.get_streaming_response(MESSAGES, ChatOptions()):
        if update.fallback is not None:
            seen.append((update.fallback.message, len(sleeps.delays)))
    assert seen == [("rate limited — retrying in 7s", 0)]  # the client had it before the 7 s wait began
    assert sleeps.delays == [7.0]


@pytest.mark.parametrize("error", [UNAUTHORIZED, SERVER_ERROR], ids=["not retryable", "retries used up"])
async def test_a_single_provider_never_reports_an_exhausted_chain(error: ProviderError) -> None:
    client, _ = chain(ScriptedChatClient([ScriptStep(error=error)] * 3))
    updates: list[ChatUpdate] = []
    with pytest.raises(ProviderError):
        async for update in client.get_streaming_response(MESSAGES, ChatOptions()):
            updates.append(update)
    assert "exhausted" not in [u.fallback.kind for u in updates if u.fallback]


async def test_a_single_provider_without_streaming_raises_without_an_exhausted_notice() -> None:
    client, _ = chain(ScriptedChatClient([ScriptStep(error=UNAUTHORIZED)]))
    with pytest.raises(ProviderError) as raised:
        await client.get_response(MESSAGES, ChatOptions())
    assert raised.value is UNAUTHORIZED
