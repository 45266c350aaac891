"""JSON GETs with a hard deadline, and how a model listing becomes a connectivity check (loopback servers only)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ironhive.adapters.diagnostics.connectivity import (
    ModelEndpoint,
    anthropic_endpoint,
    connectivity_checks,
    gemini_endpoint,
    model_ids,
    openai_compatible_endpoint,
    scrub,
)
from ironhive.adapters.diagnostics.probe import JsonRequest, fetch_all, fetch_json, redact_credentials, redact_url

KEY = "sk-probe-secret-9876"
Route = tuple[int, bytes]


class Site:
    """A loopback HTTP server answering fixed routes and recording the headers it got."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.headers: list[dict[str, str]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.headers.append({name.lower(): value for name, value in self.headers.items()})
                status, body = routes.get(self.path, (404, b'{"error": {"message": "no such route"}}'))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@pytest.fixture
def site() -> Iterator[Site]:
    routes: dict[str, Route] = {
        "/v1/models": (200, json.dumps({"object": "list", "data": [{"id": "gpt-a"}, {"id": "gpt-b"}]}).encode()),
        "/v1beta/models?pageSize=1000": (200, json.dumps({"models": [{"name": "models/gemini-x"}]}).encode()),
        "/denied/models": (401, json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode()),
        "/google-denied/models": (400, json.dumps({"error": {"code": 400, "message": "API key not valid."}}).encode()),
        "/html/models": (502, b"<html><body>Bad gateway</body></html>"),
        "/text/models": (503, b"upstream busy\n"),
        "/odd/models": (200, b'{"unexpected": true}'),
        "/broken/models": (200, b"not json"),
    }
    server = Site(routes)
    yield server
    server.close()


def test_a_listing_is_parsed_and_headers_are_sent(site: Site) -> None:
    result = fetch_json(site.url + "/v1/models", headers={"Authorization": f"Bearer {KEY}"})
    assert (result.ok, result.status, result.error) == (True, 200, None)
    assert model_ids(result.document) == ["gpt-a", "gpt-b"]
    assert site.headers[0]["authorization"] == f"Bearer {KEY}"
    assert site.headers[0]["accept"] == "application/json"


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/google-denied/models", "HTTP 400 Bad Request: API key not valid."),
        ("/html/models", "HTTP 502 Bad Gateway"),
        ("/text/models", "HTTP 503 Service Unavailable: upstream busy"),
        ("/broken/models", "the answer is not JSON"),
    ],
)
def test_failures_are_described(site: Site, path: str, error: str) -> None:
    result = fetch_json(site.url + path)
    assert (result.ok, result.error) == (False, error)


def test_a_silent_server_fails_at_the_deadline() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        started = time.monotonic()
        results = fetch_all(
            [JsonRequest(url=f"http://127.0.0.1:{port}/a"), JsonRequest(url=f"http://127.0.0.1:{port}/b")], timeout=0.3
        )
        elapsed = time.monotonic() - started
    assert [result.error for result in results] == ["no answer within 0.3 s", "no answer within 0.3 s"]
    assert elapsed < 1.5  # both waited together, not one after the other


def test_only_http_urls_are_fetched() -> None:
    assert fetch_json("file:///etc/hostname").error == "only http and https URLs are supported"


def test_credentials_are_redacted() -> None:
    assert redact_url("https://user:pw@host.example/simple") == "https://***@host.example/simple"
    assert redact_url("https://host.example/simple") == "https://host.example/simple"
    assert redact_credentials("pip --index-url https://u:p@h.example/simple/ x") == (
        "pip --index-url https://***@h.example/simple/ x"
    )


def test_connectivity_checks_pass_fail_and_never_show_the_key(site: Site) -> None:
    endpoints = [
        openai_compatible_endpoint("openai", site.url + "/v1", KEY, "gpt-b", key_setting="openai.apiKey"),
        openai_compatible_endpoint("xai", site.url + "/denied", KEY, "grok", key_setting="xai.apiKey"),
        ModelEndpoint(provider="odd", url=site.url + "/odd/models", endpoint_setting="odd.endpoint"),
        openai_compatible_endpoint("gone", site.url + "/missing", None, None, endpoint_setting="gone.endpoint"),
    ]
    checks = connectivity_checks(endpoints)
    assert [(check.name, check.status) for check in checks] == [
        ("openai", "pass"),
        ("xai", "error"),
        ("odd", "error"),
        ("gone", "error"),
    ]
    assert checks[0].message == "Reachable; lists 2 models, including the configured 'gpt-b'"
    assert KEY not in checks[1].message and "Incorrect API key provided: ***" in checks[1].message
    assert checks[1].hint == "Check xai.apiKey (`ironhive get xai.apiKey` shows it masked)."
    assert (
        checks[2].hint == checks[3].hint.replace("gone", "odd") == "Check odd.endpoint: it must be the API's base URL."
    )


def test_vendor_endpoints_follow_the_sdks_base_url_variables() -> None:
    assert anthropic_endpoint("k", None, {}).url == "https://api.anthropic.com/v1/models?limit=1000"
    assert anthropic_endpoint("k", None, {"ANTHROPIC_BASE_URL": "http://a.example/v1/"}).url == (
        "http://a.example/v1/models?limit=1000"
    )
    configured = anthropic_endpoint("k", None, {"ANTHROPIC_BASE_URL": "http://env.example"}, "http://proxy.example/")
    assert (configured.url, configured.endpoint_setting) == (
        "http://proxy.example/v1/models?limit=1000",
        "anthropic.endpoint",
    )
    assert anthropic_endpoint("k", None, {}).headers == {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    default = gemini_endpoint("k", None, {})
    assert default.url == "https://generativelanguage.googleapis.com/v1beta/models?pageSize=1000"
    assert default.headers == {"x-goog-api-key": "k"}
    assert gemini_endpoint("k", None, {"GOOGLE_GEMINI_BASE_URL": "http://g.example/proxy/v1/"}).url == (
        "http://g.example/proxy/v1/models?pageSize=1000"
    )
    assert gemini_endpoint("k", None, {"GOOGLE_GEMINI_BASE_URL": "http://g.example/"}).url == (
        "http://g.example/v1beta/models?pageSize=1000"
    )
    configured = gemini_endpoint(
        "k", None, {"GOOGLE_GEMINI_BASE_URL": "http://env.example"}, "http://p.example/v1alpha"
    )
    assert (configured.url, configured.endpoint_setting) == (
        "http://p.example/v1alpha/models?pageSize=1000",
        "googleai.endpoint",
    )
    assert gemini_endpoint("k", None, {}, "http://p.example/v1value/").url == (
        "http://p.example/v1value/v1beta/models?pageSize=1000"
    )


def test_gemini_listings_and_their_model_names(site: Site) -> None:
    (check,) = connectivity_checks([gemini_endpoint("k", "gemini-x", {"GOOGLE_GEMINI_BASE_URL": site.url})])
    assert (check.status, check.message) == ("pass", "Reachable; lists 1 model, including the configured 'gemini-x'")


def test_model_ids_and_scrub() -> None:
    assert model_ids({"data": [{"id": "a"}, {"id": 3}, "x"]}) == ["a"]
    assert model_ids({"models": [{"name": "models/b"}]}) == ["b"]
    assert model_ids({"models": "nope"}) is None
    assert model_ids([1]) is None
    assert scrub("key sk-1234 and abc", ["sk-1234", "abc"]) == "key *** and abc"  # under 4 characters: left alone
