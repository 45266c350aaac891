"""The one masking of secrets: how much of a key shows, URL credentials, secret values nested at any depth."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.config.masking import is_secret_name, mask_secret, mask_urls, mask_value

# Characters API keys, tokens and passwords are made of; the mask's own ``*`` is left out, as a mask of stars cannot
# help "containing" a secret made of stars.
SECRET_ALPHABET = string.ascii_letters + string.digits + "-_.~+/=!$%^&()[]{}:;,<>|"
secrets = st.text(alphabet=SECRET_ALPHABET, min_size=1, max_size=80)


def longest_run_of(secret: str, shown: str) -> int:
    """The longest piece of ``secret`` (consecutive characters) that appears in ``shown``."""
    return max(
        (
            end - start
            for start in range(len(secret))
            for end in range(start + 1, len(secret) + 1)
            if secret[start:end] in shown
        ),
        default=0,
    )


@pytest.mark.parametrize(
    ("value", "masked"),
    [
        ("", "***"),
        ("abc", "***"),
        ("abcd", "***d"),
        ("abcdefghijk", "***jk"),
        ("abcdefghijkl", "***jkl"),  # a 12-character key shows 3 characters, not 8
        ("sk-abcdefghijklmnop", "***mnop"),
        ("x" * 200, "***xxxx"),
    ],
)
def test_a_secret_shows_at_most_four_characters_and_a_quarter_of_its_length(value: str, masked: str) -> None:
    assert mask_secret(value) == masked


@settings(max_examples=300, deadline=None)
@given(secret=secrets)
def test_a_masked_secret_never_shows_more_than_a_quarter_or_four_characters_in_a_row(secret: str) -> None:
    shown = mask_secret(secret)
    assert secret not in shown
    assert longest_run_of(secret, shown) <= min(4, len(secret) // 4)


@settings(max_examples=200, deadline=None)
@given(secret=st.text(alphabet=string.digits + "QXZ-_~", min_size=8, max_size=80))
def test_secrets_in_urls_and_nested_values_never_show(secret: str) -> None:
    # The alphabet keeps a secret from matching the rest of the text by chance (the words, the host, the mask).
    url = f"https://user:{secret}@api.example.com/v1?api-key={secret}&model=m#access_token={secret}"
    assert secret not in mask_urls(url)
    config = {"plugins": [{"url": url, "headers": {"Authorization": f"Bearer {secret}"}}], "token": secret}
    masked = repr(mask_value("config", config))
    assert secret not in masked
    assert longest_run_of(secret, masked) <= 4


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("https://user:pass@proxy.example/v1", "https://***:***@proxy.example/v1"),
        ("https://sk-123@host/", "https://***@host/"),
        ("http://127.0.0.1:8080/v1?api-key=abc&model=gpt", "http://127.0.0.1:8080/v1?api-key=***&model=gpt"),
        ("https://x.blob.core/c?sv=2024&sig=AbC%2Bd&se=1", "https://x.blob.core/c?sv=2024&sig=***&se=1"),
        ("https://h/p?access_token=t1&password=p&Key=k&q=1", "https://h/p?access_token=***&password=***&Key=***&q=1"),
        ("https://h/cb#id_token=abc&state=s", "https://h/cb#id_token=***&state=s"),
        ("at https://h/p and ftp://u:p@files.example now", "at https://h/p and ftp://***:***@files.example now"),
        ("https://h/p/a@b?x=1", "https://h/p/a@b?x=1"),  # an @ in the path is no credential
        ("no url here: a=b&token=c", "no url here: a=b&token=c"),
    ],
)
def test_credentials_in_urls_are_masked(text: str, masked: str) -> None:
    assert mask_urls(text) == masked


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("apiKey", True),
        ("openai.api_key", True),
        ("X-Api-Key", True),
        ("Authorization", True),
        ("proxy-authorization", True),
        ("Cookie", True),
        ("hfToken", True),
        ("clientSecret", True),
        ("password", True),
        ("credentials", True),
        ("endpoint", False),
        ("maxContextTokens", False),
        ("keepAlive", False),
        ("model", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_nested_secrets_are_masked_at_any_depth_and_everything_else_kept() -> None:
    config: dict[str, Any] = {
        "openai": {"apiKey": "sk-abcdefghijklmnop", "endpoint": "https://u:p@proxy/v1", "model": "gpt-4o"},
        "mcp": {
            "servers": [
                {
                    "name": "search",
                    "url": "https://mcp.example/sse?token=tok-123",
                    "headers": {"Authorization": "Bearer abcdefghijklmnopqrst", "Accept": "text/event-stream"},
                    "env": ["PLAIN=1", "Authorization: Basic dXNlcjpwYXNzd29yZA=="],
                    "deep": {"inner": [{"password": 12345678}]},
                }
            ]
        },
        "ollama": {"enabled": True, "apiKey": None},
    }
    assert mask_value("config", config) == {
        "openai": {"apiKey": "***mnop", "endpoint": "https://***:***@proxy/v1", "model": "gpt-4o"},
        "mcp": {
            "servers": [
                {
                    "name": "search",
                    "url": "https://mcp.example/sse?token=***",
                    "headers": {"Authorization": "***qrst", "Accept": "text/event-stream"},
                    "env": ["PLAIN=1", "Authorization: ***ZA=="],
                    "deep": {"inner": [{"password": "***78"}]},
                }
            ]
        },
        "ollama": {"enabled": True, "apiKey": None},
    }


def test_long_text_is_masked_in_linear_time() -> None:
    # A tool argument of 100 000 characters goes through the masking of the execution log.
    text = "z" * 100_000 + " https://h/" + "a" * 100_000 + "?key=" + "v" * 10
    assert mask_urls(text).endswith("?key=***")
