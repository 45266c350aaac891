"""The guards of ``ironhive serve``: Host (DNS rebinding), Origin, bearer token and the token file."""

from __future__ import annotations

import stat
import string
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ironhive.domain.errors import ConfigurationError
from ironhive.serve.security import (
    allowed_hosts,
    bearer_matches,
    host_allowed,
    is_loopback,
    origin_allowed,
    retry_after,
)
from ironhive.serve.token import TOKEN_FILE, TOKEN_VARIABLE, resolve_token

PORTS = st.integers(min_value=1, max_value=65535)
LABELS = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=12)
DOMAINS = st.lists(LABELS, min_size=2, max_size=4).map(".".join)
LOOPBACK_BINDS = st.sampled_from(["127.0.0.1", "localhost", "::1", "127.0.0.2"])


@given(bound=LOOPBACK_BINDS, port=PORTS, name=st.sampled_from(["localhost", "127.0.0.1", "[::1]", "LOCALHOST"]))
def test_a_loopback_server_answers_the_loopback_names_with_its_port(bound: str, port: int, name: str) -> None:
    assert host_allowed(f"{name}:{port}", allowed_hosts(bound, port))


@given(bound=LOOPBACK_BINDS, port=PORTS, other=PORTS, name=st.sampled_from(["localhost", "127.0.0.1", "[::1]"]))
def test_another_port_or_no_port_is_refused(bound: str, port: int, other: int, name: str) -> None:
    assume(other != port)
    hosts = allowed_hosts(bound, port)
    assert not host_allowed(f"{name}:{other}", hosts)
    assert not host_allowed(name, hosts)
    assert not host_allowed(None, hosts)


@given(bound=LOOPBACK_BINDS, port=PORTS, domain=DOMAINS, with_port=st.booleans())
def test_a_rebinding_host_name_is_refused(bound: str, port: int, domain: str, with_port: bool) -> None:
    assume(domain != "localhost")
    assert not host_allowed(f"{domain}:{port}" if with_port else domain, allowed_hosts(bound, port))


@given(address=st.ip_addresses(v=4), port=PORTS)
def test_a_specific_address_answers_only_itself(address: object, port: int) -> None:
    assume(str(address) != "0.0.0.0")  # the wildcard: below
    hosts = allowed_hosts(str(address), port)
    assert host_allowed(f"{address}:{port}", hosts)
    assert host_allowed(f"localhost:{port}", hosts) == is_loopback(str(address))


@given(port=PORTS, header=st.text(max_size=40))
def test_a_wildcard_bind_leaves_hosts_to_the_token(port: int, header: str) -> None:
    assert allowed_hosts("0.0.0.0", port) is None and allowed_hosts("::", port) is None
    assert host_allowed(header, None)


ORIGINS = st.builds(
    lambda scheme, domain, port: f"{scheme}://{domain}" + (f":{port}" if port else ""),
    st.sampled_from(["http", "https"]),
    DOMAINS,
    st.one_of(st.none(), PORTS),
)


@given(allowed=st.lists(ORIGINS, max_size=5), origin=ORIGINS)
def test_an_origin_is_allowed_exactly_when_listed(allowed: list[str], origin: str) -> None:
    assert origin_allowed(origin, allowed) == (origin in allowed)


@given(allowed=st.lists(ORIGINS, min_size=1, max_size=5), data=st.data())
def test_near_misses_of_a_listed_origin_are_refused(allowed: list[str], data: st.DataObject) -> None:
    origin = data.draw(st.sampled_from(allowed))
    for variant in (origin + "/", origin + ".evil.example", origin.upper(), "x" + origin, origin + ":1"):
        if variant not in allowed:
            assert not origin_allowed(variant, allowed)
    assert not origin_allowed("null", [*allowed, "null"])


@given(token=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=16, max_size=64))
def test_only_the_exact_bearer_token_passes(token: str) -> None:
    assert bearer_matches(f"Bearer {token}", token)
    assert bearer_matches(f"bearer {token}", token)
    assert not bearer_matches(None, token)
    assert not bearer_matches(token, token)
    assert not bearer_matches(f"Basic {token}", token)
    assert not bearer_matches(f"Bearer {token[:-1]}", token)
    assert not bearer_matches(f"Bearer {token}x", token)
    assert not bearer_matches("Bearer ", token)


@given(header=st.text(max_size=80), token=st.text(alphabet=string.ascii_letters, min_size=16, max_size=32))
def test_any_header_is_judged_without_error(header: str, token: str) -> None:
    scheme, _, value = header.strip().partition(" ")
    assert bearer_matches(header, token) == (scheme.lower() == "bearer" and value.strip() == token)


@given(seconds=st.floats(allow_nan=True, allow_infinity=True))
def test_retry_after_is_a_whole_positive_number_of_seconds(seconds: float) -> None:
    assert int(retry_after(seconds)) >= 1


def test_the_token_is_generated_once_owner_only_and_reused(tmp_path: Path) -> None:
    first = resolve_token(None, {}, tmp_path)
    path = tmp_path / ".ironhive" / TOKEN_FILE
    assert first.source == "generated" and first.path == path and len(first.value) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = resolve_token(None, {}, tmp_path)
    assert (again.source, again.value) == ("file", first.value)
    assert first.value not in repr(first)
    assert [entry.name for entry in path.parent.iterdir()] == [TOKEN_FILE]


def test_a_token_file_open_to_others_is_restricted_and_a_damaged_one_replaced(tmp_path: Path) -> None:
    first = resolve_token(None, {}, tmp_path)
    assert first.path is not None
    first.path.chmod(0o644)
    assert resolve_token(None, {}, tmp_path).value == first.value
    assert stat.S_IMODE(first.path.stat().st_mode) == 0o600
    first.path.write_text("short\n")
    replaced = resolve_token(None, {}, tmp_path)
    assert replaced.source == "generated" and replaced.value != first.value


def test_configured_tokens_win_and_are_checked(tmp_path: Path) -> None:
    configured = "c" * 20
    assert resolve_token(configured, {TOKEN_VARIABLE: "e" * 20}, tmp_path).source == "config"
    from_environment = resolve_token(None, {TOKEN_VARIABLE: "e" * 20}, tmp_path)
    assert (from_environment.source, from_environment.value, from_environment.configured) == (
        "environment",
        "e" * 20,
        True,
    )
    assert not (tmp_path / ".ironhive" / TOKEN_FILE).exists()
    with pytest.raises(ConfigurationError, match="at least 16"):
        resolve_token("short", {}, tmp_path)
    with pytest.raises(ConfigurationError, match="printable"):
        resolve_token(None, {TOKEN_VARIABLE: "with a space inside it"}, tmp_path)
