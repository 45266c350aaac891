"""The OpenAI SDK's clients share one TLS context per process, rebuilt when SSL_CERT_FILE or SSL_CERT_DIR differ."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import pytest

from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.adapters.tls import tls_context


def sdk_context(client: OpenAIChatClient) -> ssl.SSLContext:
    sdk = client._client()
    context: ssl.SSLContext = sdk._client._transport._pool._ssl_context  # type: ignore[attr-defined]
    return context


def test_clients_share_the_process_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = OpenAIChatClient(api_key="sk-test", model="gpt-test")
    second = OpenAIChatClient(api_key="sk-test", model="gpt-test", base_url="http://127.0.0.1:9/v1")
    assert sdk_context(first) is sdk_context(second) is tls_context()
    assert tls_context().verify_mode is ssl.CERT_REQUIRED and tls_context().check_hostname


def test_a_run_with_its_own_ca_file_gets_its_own_context(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    default = tls_context()
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    own = tls_context()
    assert own is not default
    assert own is tls_context()
    assert own.cert_store_stats()["x509_ca"] > 0
