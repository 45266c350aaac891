"""The one backoff rule: delays as a pure function of the retry number, Retry-After and an injected random draw."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.domain.errors import ProviderError
from ironhive.domain.failover import ChainedProvider, FailoverChatClient, RetryPolicy
from ironhive.ports.chat import ChatOptions

seconds = st.floats(min_value=0.001, max_value=1000, allow_nan=False)
policies = st.builds(
    RetryPolicy,
    max_retries=st.none() | st.integers(min_value=0, max_value=20),
    initial_backoff=seconds,
    max_backoff=seconds,
    max_retry_after=st.none() | seconds,
    jitter=st.floats(min_value=0, max_value=1),
)
draws = st.floats(min_value=0, max_value=1, exclude_max=True)


@given(policies, st.integers(min_value=1, max_value=10_000), draws)
def test_a_backoff_doubles_up_to_the_cap_and_jitter_only_shortens_it(
    policy: RetryPolicy, retry: int, draw: float
) -> None:
    full = min(policy.initial_backoff * 2.0 ** min(retry - 1, 64), policy.max_backoff)
    delay = policy.delay(retry, draw=draw)
    assert full * (1 - policy.jitter) - 1e-9 <= delay <= full + 1e-9
    assert policy.delay(retry, draw=0.0) == full  # no draw, no jitter
    assert policy.delay(retry + 1, draw=draw) >= delay  # the same draw never makes a later wait shorter


@given(policies, st.integers(min_value=1, max_value=100), st.floats(allow_nan=False, allow_infinity=False), draws)
def test_a_retry_after_is_honoured_up_to_its_cap_whatever_the_draw(
    policy: RetryPolicy, retry: int, retry_after: float, draw: float
) -> None:
    cap = policy.max_backoff if policy.max_retry_after is None else policy.max_retry_after
    assert policy.delay(retry, retry_after, draw=draw) == min(max(retry_after, 0.0), cap)


@given(policies, st.integers(min_value=0, max_value=50))
def test_it_gives_up_after_max_retries_failures(policy: RetryPolicy, failures: int) -> None:
    assert policy.gives_up(failures) == (policy.max_retries is not None and failures > policy.max_retries)


def test_exact_delays_without_jitter() -> None:
    policy = RetryPolicy(initial_backoff=1.0, max_backoff=5.0)
    assert [policy.delay(retry) for retry in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.delay(10**9) == 5.0  # no overflow on a huge retry number
    assert RetryPolicy(initial_backoff=4.0, jitter=0.5).delay(1, draw=0.5) == 3.0


@pytest.mark.parametrize(
    "values",
    [
        {"max_retries": -1},
        {"initial_backoff": -1.0},
        {"max_backoff": -0.5},
        {"max_retry_after": -1.0},
        {"jitter": 1.5},
        {"jitter": -0.1},
    ],
)
def test_bad_values_are_refused(values: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**values)  # type: ignore[arg-type]


def test_a_failover_chain_needs_a_bounded_retry_count() -> None:
    provider = ChainedProvider(name="p", client=ScriptedChatClient([]))
    with pytest.raises(ValueError, match="bounded max_retries"):
        FailoverChatClient([provider], policy=RetryPolicy(max_retries=None))


async def test_the_failover_takes_its_jitter_from_the_injected_draw() -> None:
    failing = ProviderError("boom", status=500, retryable=True)
    client = ScriptedChatClient([ScriptStep(error=failing), ScriptStep(error=failing), ScriptStep(text="ok")])
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    failover = FailoverChatClient(
        [ChainedProvider(name="p", client=client)],
        policy=RetryPolicy(max_retries=2, initial_backoff=2.0, jitter=0.5),
        sleep=sleep,
        draw=lambda: 1.0,
    )
    updates = [update async for update in failover.get_streaming_response([], ChatOptions())]
    assert delays == [1.0, 2.0]
    assert [u.fallback.message for u in updates if u.fallback] == [
        "boom — retrying in 1s",
        "boom — retrying in 2s",
    ]
