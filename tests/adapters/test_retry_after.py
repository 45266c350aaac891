"""The one reader of a server's requested retry delay, shared by the provider adapters and the HTTP runner."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import aiohttp
import httpx2
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from ironhive.adapters.retry_after import (
    header_reader,
    parse_retry_after,
    retry_after_for_status,
    retry_after_seconds,
)
from ironhive.domain.errors import ProviderError

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def status_error(headers: dict[str, str]) -> openai.APIStatusError:
    response = httpx2.Response(429, headers=headers, request=REQUEST)
    return openai.APIStatusError("Error code: 429", response=response, body=None)


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_delta_seconds_are_read_and_never_negative(seconds: float) -> None:
    assert parse_retry_after(repr(seconds)) == max(0.0, seconds)


@given(st.integers(min_value=0, max_value=10**6))
def test_an_http_date_is_read_as_the_seconds_until_it(offset: int) -> None:
    when = datetime.fromtimestamp(int(time.time()) + offset, UTC)
    seconds = parse_retry_after(format_datetime(when, usegmt=True))
    assert seconds is not None and offset - 5 <= seconds <= offset


@pytest.mark.parametrize("value", [None, "", "  ", "soon", "nan", "inf", "-inf", "Mon, 99 Foo 2020"])
def test_unusable_values_are_none(value: str | None) -> None:
    assert parse_retry_after(value) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "4", "X-Other": "1"},
        CIMultiDictProxy(CIMultiDict({"RETRY-AFTER": "4"})),  # aiohttp's response headers
        httpx2.Headers({"retry-after": "4"}),
    ],
    ids=["mapping", "aiohttp", "httpx2"],
)
def test_headers_are_looked_up_without_regard_to_case(headers: object) -> None:
    assert header_reader(headers)("retry-after") == "4"
    assert header_reader(headers)("retry-after-ms") is None


def test_no_headers_read_as_none() -> None:
    assert header_reader(None)("retry-after") is None


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "-3"}, 0.0),
        ({}, None),
    ],
)
def test_the_delay_is_read_from_the_sdk_error_or_an_error_raised_from_it(
    headers: dict[str, str], seconds: float | None
) -> None:
    exc = status_error(headers)
    try:
        raise ProviderError("translated") from exc
    except ProviderError as translated:
        assert retry_after_seconds(translated, openai.APIStatusError) == seconds
    assert retry_after_seconds(exc, openai.APIStatusError) == seconds


def test_an_error_without_the_sdk_error_in_its_chain_states_nothing() -> None:
    assert retry_after_seconds(ProviderError("x"), openai.APIStatusError) is None
    assert retry_after_seconds(aiohttp.ClientError("x"), openai.APIStatusError) is None


def test_a_delay_stated_in_the_body_is_read_only_without_a_header() -> None:
    def stated(error: openai.APIStatusError) -> float:
        return 37.0

    assert retry_after_seconds(status_error({}), openai.APIStatusError, stated_in=stated) == 37.0
    assert retry_after_seconds(status_error({"retry-after": "4"}), openai.APIStatusError, stated_in=stated) == 4.0


@pytest.mark.parametrize(("status", "seconds"), [(429, 2.0), (503, 2.0), (500, None), (200, None), (301, None)])
def test_only_statuses_that_carry_it_ask_for_a_delay(status: int, seconds: float | None) -> None:
    assert retry_after_for_status(status, "2") == seconds


def test_an_http_date_for_a_status() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_for_status(503, later) or 0) <= 30
