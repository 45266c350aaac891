"""Provider failover: transient errors are retried with backoff, then the next provider of the chain takes over."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from ironhive.domain.errors import ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    FallbackKind,
    FallbackNotice,
)

FitMessages = Callable[[Sequence[ChatMessage], int], Awaitable[Sequence[ChatMessage]]]
"""Reduces a request to fit a window of the given number of tokens (compaction), for a provider with a smaller one."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChainedProvider:
    """One provider of the failover chain.

    Attributes:
        name: The provider's name (for messages).
        client: Its chat client.
        window: Its model's context window in tokens, when known.
    """

    name: str
    client: ChatClient
    window: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failed request is tried again: ironhive's one backoff rule.

    The provider failover and the HTTP runner (inbox reconnects, event deliveries) take their waits from here: a pure
    function of the retry number and the server's ``Retry-After``, with the randomness (jitter) passed in by the caller.

    Attributes:
        max_retries: Retries after the first attempt (so ``max_retries + 1`` attempts); None retries without end.
        initial_backoff: Seconds before the first retry; doubled for each further one.
        max_backoff: The longest backoff.
        max_retry_after: The longest wait a server's ``Retry-After`` may impose; None: ``max_backoff``.
        jitter: The share of each backoff that is random, from 0 (none) to 1 ("full jitter"): a backoff ``b`` becomes a
            wait between ``b * (1 - jitter)`` and ``b``, so clients that failed together do not retry together. A
            ``Retry-After`` is honoured as stated.

    Raises:
        ValueError: A negative value, or a jitter outside 0..1.
    """

    max_retries: int | None = 2
    initial_backoff: float = 1.0
    max_backoff: float = 30.0
    max_retry_after: float | None = None
    jitter: float = 0.0

    def __post_init__(self) -> None:
        values = (self.max_retries or 0, self.initial_backoff, self.max_backoff, self.max_retry_after or 0.0)
        if min(values) < 0:
            raise ValueError("retry policy values must not be negative")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("the retry jitter must be between 0 and 1")

    def delay(self, retry: int, retry_after: float | None = None, *, draw: float = 0.0) -> float:
        """Seconds to wait before retry number ``retry`` (1-based).

        Args:
            retry: Which retry this is: 1 after the first failure.
            retry_after: The wait the server asked for (``Retry-After``): honoured, up to ``max_retry_after``.
            draw: A number in ``[0, 1)`` from the caller's random source; the backoff is shortened by
                ``jitter * draw`` of itself.
        """
        if retry_after is not None:
            cap = self.max_backoff if self.max_retry_after is None else self.max_retry_after
            return min(max(retry_after, 0.0), cap)
        backoff = min(self.initial_backoff * 2.0 ** min(max(retry - 1, 0), 64), self.max_backoff)
        return backoff * (1.0 - self.jitter * min(max(draw, 0.0), 1.0))

    def gives_up(self, failures: int) -> bool:
        """Whether ``failures`` consecutive failures exhaust the retries."""
        return self.max_retries is not None and failures > self.max_retries


@dataclass(kw_only=True, slots=True)
class _Run:
    """What one call over the chain has seen so far."""

    notices: list[FallbackNotice] = field(default_factory=list)
    last_error: ProviderError | None = None
    provider_error: ProviderError | None = None  # the current provider's last error

    def failed(self, error: ProviderError) -> None:
        self.last_error = self.provider_error = error


def error_category(error: ProviderError) -> str:
    """The failover category of a provider error."""
    status = error.status
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status == 408:
        return "timeout"
    if status is not None and status >= 500:
        return "server"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    return "network" if error.retryable else "unknown"


class FailoverChatClient:
    """A ChatClient over an ordered chain of providers.

    Transient errors (rate limits honouring ``Retry-After``, overload, 5xx, network, timeouts) are retried with
    backoff; then — or at once for auth and bad-request errors — the next provider takes over. Every step is reported
    as a ``FallbackNotice`` (in the stream, or in ``ChatResponse.notices``). Failover happens only before the first
    piece of a response: a stream that breaks after output started raises, so no text is duplicated. A context
    overflow is not failed over (the caller compacts and retries). A provider whose known window is smaller than the
    request gets the request fitted first, or is skipped when it cannot be fitted.

    Args:
        providers: The chain, in order of preference.
        policy: Retry counts and backoff (a bounded ``max_retries``: the next provider must get its turn).
        count_tokens: Estimates a request's tokens (to honour a provider's window).
        fit: Reduces a request to a window; without it an oversized request skips that provider.
        sleep: Waits between attempts (injectable for tests).
        draw: The random source of the policy's jitter, numbers in ``[0, 1)`` (injectable for tests).

    Raises:
        ValueError: No provider, or a policy that retries without end.
    """

    def __init__(
        self,
        providers: Sequence[ChainedProvider],
        *,
        policy: RetryPolicy | None = None,
        count_tokens: Callable[[Sequence[ChatMessage]], int] | None = None,
        fit: FitMessages | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        draw: Callable[[], float] = random.random,
    ) -> None:
        if not providers:
            raise ValueError("the failover chain needs at least one provider")
        self._policy = policy or RetryPolicy()
        if self._policy.max_retries is None:
            raise ValueError("the failover chain needs a bounded max_retries, or the next provider never gets its turn")
        self._max_retries = self._policy.max_retries
        self._providers = tuple(providers)
        self._draw = draw
        self._count = count_tokens
        self._fit = fit
        self._sleep = sleep

    @property
    def providers(self) -> tuple[ChainedProvider, ...]:
        """The chain, in order of preference."""
        return self._providers

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer in one piece from the first provider that succeeds."""
        run = _Run()
        notices = run.notices
        async with contextlib.aclosing(self._candidates(messages, run)) as candidates:
            async for index, provider, request in candidates:
                for attempt in itertools.count(1):
                    try:
                        response = await provider.client.get_response(request, self._options_for(index, options))
                    except ContextOverflowError:
                        raise
                    except ProviderError as error:
                        run.failed(error)
                        delay = self._retry_delay(error, index, attempt, notices)
                        if delay is None:
                            break
                        await self._sleep(delay)
                        continue
                    return replace(response, notices=(*notices, *response.notices))
        raise self._exhausted(run.last_error, notices)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatUpdate, None]:
        """Stream from the first provider that starts answering; notices are streamed as they happen."""
        run = _Run()
        notices = run.notices
        async with contextlib.aclosing(self._candidates(messages, run)) as candidates:
            async for index, provider, request in candidates:
                for attempt in itertools.count(1):
                    for notice in notices:
                        yield ChatUpdate(fallback=notice)
                    notices.clear()
                    started = False
                    failure: ProviderError | None = None
                    delay: float | None = None
                    stream = provider.client.get_streaming_response(request, self._options_for(index, options))
                    try:
                        async for update in stream:
                            started = True
                            yield update
                    except ContextOverflowError:
                        raise
                    except ProviderError as error:
                        if started:
                            raise  # output already reached the user: failing over would duplicate it
                        run.failed(error)
                        failure = error
                        delay = self._retry_delay(error, index, attempt, notices)
                    finally:
                        aclose = getattr(stream, "aclose", None)
                        if aclose is not None:
                            await aclose()
                    if failure is None:
                        return
                    if delay is None:
                        break
                    for notice in notices:  # the retry notice goes out before the wait, so a client sees it at once
                        yield ChatUpdate(fallback=notice)
                    notices.clear()
                    await self._sleep(delay)
        exhausted = self._exhausted(run.last_error, notices)
        for notice in notices:
            yield ChatUpdate(fallback=notice)
        raise exhausted

    async def _candidates(
        self, messages: Sequence[ChatMessage], run: _Run
    ) -> AsyncGenerator[tuple[int, ChainedProvider, Sequence[ChatMessage]], None]:
        """The providers in turn, each with the request it may receive; after each one that is left, the switch to
        the next is noted (with the error that ended it, or the window it could not fit)."""
        for index, provider in enumerate(self._providers):
            request = await self._request_for(index, messages)
            run.provider_error = None
            if request is not None:
                yield index, provider, request
            self._switch(index, run.provider_error, run.notices)

    def _retry_delay(
        self, error: ProviderError, index: int, attempt: int, notices: list[FallbackNotice]
    ) -> float | None:
        """The wait before another attempt on the same provider (its ``retry`` notice added), or None for none."""
        if not self._should_retry(error, attempt):
            return None
        delay = self._policy.delay(attempt, error.retry_after, draw=self._draw())
        notices.append(
            self._notice("retry", error_category(error), index, attempt, f"{error} — retrying in {delay:g}s")
        )
        return delay

    def _switch(self, index: int, error: ProviderError | None, notices: list[FallbackNotice]) -> None:
        if index + 1 < len(self._providers):
            window = self._providers[index].window
            category = error_category(error) if error is not None else "context_limit"
            reason = str(error) if error is not None else f"the request does not fit its window of {window} tokens"
            message = f"{reason}; switching from {self._providers[index].name} to {self._providers[index + 1].name}"
            notices.append(self._notice("fallback", category, index, 0, message))

    def _exhausted(self, error: ProviderError | None, notices: list[FallbackNotice]) -> ProviderError:
        """The error ending the call; an ``exhausted`` notice only when there was a chain to exhaust."""
        category = error_category(error) if error is not None else "context_limit"
        message = (
            f"every provider failed; the last error: {error}" if error else "no provider's window fits the request"
        )
        if len(self._providers) > 1:
            notices.append(self._notice("exhausted", category, len(self._providers) - 1, 0, message))
        return error or ProviderError(message)

    def _should_retry(self, error: ProviderError, attempt: int) -> bool:
        return error.retryable and not self._policy.gives_up(attempt)

    async def _request_for(self, index: int, messages: Sequence[ChatMessage]) -> Sequence[ChatMessage] | None:
        """The request as provider ``index`` may receive it, or ``None`` when it cannot fit its window."""
        window = self._providers[index].window
        if window is None or self._count is None or self._count(messages) <= window:
            return messages
        fitted = await self._fit(messages, window) if self._fit is not None else None
        return fitted if fitted is not None and self._count(fitted) <= window else None

    def _options_for(self, index: int, options: ChatOptions) -> ChatOptions:
        # A model named for the first provider means nothing to the others.
        return options if index == 0 else replace(options, model=None)

    def _notice(self, kind: FallbackKind, category: str, index: int, attempt: int, message: str) -> FallbackNotice:
        return FallbackNotice(
            kind=kind,
            category=category,
            provider_index=index,
            total_providers=len(self._providers),
            attempt=attempt,
            max_attempts=self._max_retries + 1,
            message=message,
        )
