"""Which wire API the OpenAI-compatible providers speak: Responses for OpenAI's own endpoint, chat elsewhere, and
the ``api`` key of the provider's section overriding either."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.adapters.openai.responses_client import OpenAIResponsesChatClient
from ironhive.adapters.openai.spec import AZURE, OPENAI, openai_client


def client_type(section: str, settings: dict[str, str]) -> type:
    config = IronHiveConfig.model_validate({section: settings})
    spec = OPENAI if section == "openai" else AZURE
    assert spec.connect is not None
    connection = spec.connect(config)
    return type(openai_client(spec.name, connection, "m"))


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"apiKey": "k"}, OpenAIResponsesChatClient),
        ({"apiKey": "k", "endpoint": "https://api.openai.com/v1/"}, OpenAIResponsesChatClient),
        ({"apiKey": "k", "api": "chat"}, OpenAIChatClient),
        ({"apiKey": "k", "endpoint": "http://127.0.0.1:8080/v1"}, OpenAIChatClient),
        ({"apiKey": "k", "endpoint": "http://127.0.0.1:8080/v1", "api": "responses"}, OpenAIResponsesChatClient),
    ],
)
def test_openai_section(settings: dict[str, str], expected: type) -> None:
    assert client_type("openai", settings) is expected


@pytest.mark.parametrize(("api", "expected"), [(None, OpenAIChatClient), ("responses", OpenAIResponsesChatClient)])
def test_azure_speaks_chat_unless_told(api: str | None, expected: type) -> None:
    settings = {"endpoint": "https://r.openai.azure.com", "apiKey": "k", "deploymentName": "d"}
    assert client_type("azureopenai", {**settings, **({"api": api} if api else {})}) is expected


def test_an_unknown_api_is_refused() -> None:
    with pytest.raises(ValidationError, match="responses"):
        IronHiveConfig.model_validate({"openai": {"api": "completions"}})
