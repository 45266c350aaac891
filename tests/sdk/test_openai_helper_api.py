"""add_ironhive_with_openai chooses the wire API as the CLI's openai provider does: Responses on OpenAI's endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive import IronHiveContainer
from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.adapters.openai.responses_client import OpenAIResponsesChatClient
from ironhive.container import openai_api_for
from tests.support.openai_server import LoopbackOpenAIServer

API_KEY = "sk-loopback-secret-key-0123456789"
OPENAI = "https://api.openai.com/v1"


@pytest.fixture
def server() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer(api_key=API_KEY) as running:
        yield running


def one_turn(hive: IronHiveContainer) -> str:
    with hive:
        return hive.agent_loop().run_sync("hi").content


def test_a_compatible_endpoint_gets_chat_completions(server: LoopbackOpenAIServer) -> None:
    server.enqueue_text("over chat")
    hive = IronHiveContainer().add_ironhive_with_openai(API_KEY, "gpt-test", endpoint=server.base_url)

    assert one_turn(hive) == "over chat"
    assert "messages" in server.requests[0] and "input" not in server.requests[0]


def test_api_responses_overrides_the_choice_for_a_compatible_endpoint(server: LoopbackOpenAIServer) -> None:
    server.enqueue_text("over responses")
    hive = IronHiveContainer().add_ironhive_with_openai(API_KEY, "gpt-test", endpoint=server.base_url, api="responses")

    assert one_turn(hive) == "over responses"
    assert "input" in server.requests[0] and "messages" not in server.requests[0]


@pytest.mark.parametrize(
    ("endpoint", "api", "expected"),
    [
        (None, None, OpenAIResponsesChatClient),
        (OPENAI + "/", None, OpenAIResponsesChatClient),
        ("http://127.0.0.1:9/v1", None, OpenAIChatClient),
        (None, "chat", OpenAIChatClient),
    ],
)
def test_the_registered_client_speaks_the_chosen_api(
    monkeypatch: pytest.MonkeyPatch, endpoint: str | None, api: str | None, expected: type[OpenAIChatClient]
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    hive = IronHiveContainer().add_ironhive_with_openai(API_KEY, "gpt-test", endpoint=endpoint, api=api)

    client = hive.slots.provider_choices()[0].build()

    assert type(client) is expected


@pytest.mark.parametrize("api", ["Responses", "completions", ""])
def test_an_unknown_api_is_refused_at_registration(api: str) -> None:
    with pytest.raises(ValueError, match="api must be one of responses, chat"):
        IronHiveContainer().add_ironhive_with_openai(API_KEY, "gpt-test", api=api)


@given(host=st.from_regex(r"[a-z]{1,12}(\.[a-z]{1,8})?\.(com|org|local)", fullmatch=True), slash=st.booleans())
def test_only_openais_own_endpoint_speaks_responses(host: str, slash: bool) -> None:
    tail = "/" if slash else ""
    expected = "responses" if host == "api.openai.com" else "chat"
    assert openai_api_for(f"https://{host}/v1{tail}", {}) == expected
    assert openai_api_for(f"{OPENAI}{tail}", {"OPENAI_BASE_URL": f"https://{host}/v1"}) == "responses"


def test_without_an_endpoint_the_sdks_base_url_variable_decides() -> None:
    assert openai_api_for(None, {}) == "responses"
    assert openai_api_for(None, {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}) == "chat"
    assert openai_api_for(None, {"OPENAI_BASE_URL": OPENAI}) == "responses"
    assert openai_api_for("http://127.0.0.1:8080/v1", {"OPENAI_BASE_URL": OPENAI}) == "chat"
