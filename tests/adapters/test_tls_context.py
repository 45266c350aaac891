"""The OpenAI SDK's clients share one TLS context per process and per SSL_CERT_FILE/SSL_CERT_DIR; CAs load lazily."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import http.server
import ipaddress
import os
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import certifi
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.openai.client import OpenAIChatClient
from ironhive.adapters.tls import LazyTrustContext, TrustLoadError, load_tls_trust, new_tls_context, tls_context


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
    assert own.cert_store_stats()["x509_ca"] == 0  # nothing is read until a TLS connection needs it
    assert load_tls_trust() is own and own.cert_store_stats()["x509_ca"] > 0


# -- the trust loads at the first TLS handshake, exactly as the SDK would load it -----------------------------------


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, issuer_key: ec.EllipticCurvePrivateKey, ca: bool
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, Path]]:
    """A loopback HTTPS server whose certificate (for 127.0.0.1) a throwaway CA signed; yields (port, CA, stranger)."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key, stranger_key, server_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = _certificate("test CA", ca_key, "test CA", ca_key, ca=True)
    (folder / "ca.pem").write_bytes(_pem(ca))
    (folder / "stranger.pem").write_bytes(_pem(_certificate("stranger", stranger_key, "stranger", stranger_key, True)))
    chain = folder / "server.pem"
    key = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    chain.write_bytes(_pem(_certificate("server", server_key, "test CA", ca_key, ca=False)) + key)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(chain)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # the handshakes the tests make fail on purpose

    server = Server(("127.0.0.1", 0), Handler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], folder / "ca.pem", folder / "stranger.pem"
    server.shutdown()
    server.server_close()
    thread.join()


def test_building_the_context_loads_no_ca() -> None:
    for context in (new_tls_context(None, None, None), new_tls_context(certifi.where(), None, None)):
        assert isinstance(context, LazyTrustContext) and not context.trust_loaded
        assert context.cert_store_stats()["x509_ca"] == 0
        assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname


@settings(max_examples=12, deadline=None)
@given(
    cafile=st.sampled_from([None, "", "bundle"]),
    capath=st.sampled_from([None, "", "folder"]),
    keylog=st.sampled_from([None, "keys.log"]),
)
def test_the_loaded_trust_is_the_sdks(cafile: str | None, capath: str | None, keylog: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        values = {"bundle": certifi.where(), "folder": folder, "keys.log": os.path.join(folder, "keys.log"), "": ""}
        environ = {
            name: values[value]
            for name, value in (("SSL_CERT_FILE", cafile), ("SSL_CERT_DIR", capath), ("SSLKEYLOGFILE", keylog))
            if value is not None
        }
        with mock.patch.dict(os.environ, environ, clear=False):
            for name in {"SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE"} - environ.keys():
                os.environ.pop(name, None)
            sdk = httpx2.create_ssl_context()
            ours = load_tls_trust()
        assert ours is not sdk
        assert {bytes(c) for c in ours.get_ca_certs(binary_form=True)} == {  # type: ignore[call-overload]
            bytes(c)
            for c in sdk.get_ca_certs(binary_form=True)  # type: ignore[call-overload]
        }
        for attribute in ("verify_mode", "check_hostname", "verify_flags", "options", "protocol", "keylog_filename"):
            assert getattr(ours, attribute) == getattr(sdk, attribute), attribute
        assert ours.cert_store_stats() == sdk.cert_store_stats()


def _get(port: int, context: ssl.SSLContext) -> str:
    with httpx2.Client(verify=context) as client:
        return client.get(f"https://127.0.0.1:{port}/").text


def test_a_handshake_uses_the_lazily_loaded_trust(https_server: tuple[int, Path, Path]) -> None:
    port, ca, stranger = https_server
    trusted = new_tls_context(str(ca), None, None)
    assert _get(port, trusted) == "ok" and isinstance(trusted, LazyTrustContext) and trusted.trust_loaded
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(port, new_tls_context(str(stranger), None, None))
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(port, new_tls_context(None, None, None))  # the system's CAs do not know the test CA


def test_through_the_openai_client(https_server: tuple[int, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    port, ca, _ = https_server
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    client = OpenAIChatClient(api_key="sk-test", model="gpt-test", base_url=f"https://127.0.0.1:{port}/v1")
    context = sdk_context(client)
    assert isinstance(context, LazyTrustContext)

    async def request() -> int:
        response = await client._client()._client.get(f"https://127.0.0.1:{port}/")  # the SDK's own transport
        await client.aclose()
        return response.status_code

    assert asyncio.run(request()) == 200 and context.trust_loaded


def test_a_wrong_host_name_fails(https_server: tuple[int, Path, Path]) -> None:
    port, ca, _ = https_server
    context = new_tls_context(str(ca), None, None)
    with socket.create_connection(("127.0.0.1", port)) as raw, pytest.raises(ssl.SSLCertVerificationError):
        context.wrap_socket(raw, server_hostname="elsewhere.test")


def test_an_unreadable_ca_file_is_a_clear_tls_error(tmp_path: Path) -> None:
    context = new_tls_context(str(tmp_path / "missing.pem"), None, None)
    bio = ssl.MemoryBIO()
    with pytest.raises(TrustLoadError, match=r"SSL_CERT_FILE=.*missing\.pem"):
        context.wrap_bio(bio, ssl.MemoryBIO(), server_hostname="127.0.0.1")
    assert isinstance(context, LazyTrustContext) and not context.trust_loaded


def test_plain_http_never_loads_the_trust(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with httpx2.Client(verify=tls_context()) as client:
            assert client.get(f"http://127.0.0.1:{server.server_address[1]}/").status_code == 501
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    context = tls_context()
    assert isinstance(context, LazyTrustContext) and not context.trust_loaded
    assert context.cert_store_stats()["x509_ca"] == 0


def test_concurrent_first_handshakes_load_once(https_server: tuple[int, Path, Path]) -> None:
    port, ca, _ = https_server
    loads = []

    def load(context: ssl.SSLContext) -> None:
        loads.append(threading.get_ident())
        time.sleep(0.05)  # every other thread arrives while this one loads
        context.load_verify_locations(cafile=str(ca))

    context = LazyTrustContext(load, "test CA")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: _get(port, context), range(4)))
    assert answers == ["ok"] * 4 and len(loads) == 1
