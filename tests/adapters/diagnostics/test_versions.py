"""Version ordering as PEP 440 defines it (through ``packaging``): the order, equal spellings and refusals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.diagnostics.versions import is_newer, parse_version

ORDERED = [
    "0.9",
    "1.0.dev1",
    "1.0a1.dev2",
    "1.0a1",
    "1.0a2",
    "1.0b1",
    "1.0rc1",
    "1.0",
    "1.0.post1.dev1",
    "1.0.post1",
    "1.0.1",
    "1.1",
    "1!0.1",
]


def test_the_pep_440_order() -> None:
    parsed = [parse_version(text) for text in ORDERED]
    assert parsed == sorted(parsed)
    assert len(set(parsed)) == len(parsed)


@pytest.mark.parametrize(
    ("first", "second"), [("1.0", "1.0.0"), ("v1.2", "1.2"), ("1.0+local.7", "1.0"), ("1.0-1", "1.0.post1")]
)
def test_equal_spellings(first: str, second: str) -> None:
    assert parse_version(first) == parse_version(second)


def test_is_newer() -> None:
    assert is_newer("0.2.0", "0.1.0")
    assert not is_newer("0.1.0", "0.1.0")
    assert not is_newer("0.1.0rc1", "0.1.0")
    assert is_newer("0.1.1.dev1", "0.1.0")
    assert is_newer("1!0.1", "2.0")


@pytest.mark.parametrize(("candidate", "installed"), [("latest", "0.1.0"), ("0.2.0", "dev")])
def test_is_newer_refuses_a_non_version_by_name(candidate: str, installed: str) -> None:
    with pytest.raises(ValueError, match="is not a version number"):
        is_newer(candidate, installed)


@pytest.mark.parametrize("text", ["", "latest", "1..0", "1.0-beta-x"])
def test_not_a_version(text: str) -> None:
    with pytest.raises(ValueError, match="is not a version number"):
        parse_version(text)


_numbers = st.integers(min_value=0, max_value=30)
_RANK = {"a": 0, "b": 1, "rc": 2}
Parts = tuple[list[int], tuple[str, int] | None, int | None, int | None]
_parts = st.tuples(
    st.lists(_numbers, min_size=1, max_size=4),
    st.none() | st.tuples(st.sampled_from(["a", "b", "rc"]), _numbers),
    st.none() | _numbers,
    st.none() | _numbers,
)


def spelled(parts: Parts) -> str:
    release, pre, post, dev = parts
    return (
        ".".join(map(str, release))
        + (f"{pre[0]}{pre[1]}" if pre else "")
        + (f".post{post}" if post is not None else "")
        + (f".dev{dev}" if dev is not None else "")
    )


def pep_440_key(parts: Parts) -> tuple[object, ...]:
    """The order PEP 440 states, built from the parts: 1.0.dev1 < 1.0a1 < 1.0 < 1.0.post1; trailing zeros ignored."""
    release, pre, post, dev = parts
    trimmed = list(release)
    while len(trimmed) > 1 and trimmed[-1] == 0:
        trimmed.pop()
    if pre is not None:
        pre_key: tuple[int, ...] = (1, _RANK[pre[0]], pre[1])
    else:
        pre_key = (0,) if dev is not None and post is None else (2,)
    post_key = (1, post) if post is not None else (0,)
    dev_key = (0, dev) if dev is not None else (1,)
    return (tuple(trimmed), pre_key, post_key, dev_key)


@given(_parts, _parts)
def test_is_newer_follows_the_pep_440_order(first: Parts, second: Parts) -> None:
    assert is_newer(spelled(first), spelled(second)) == (pep_440_key(first) > pep_440_key(second))
    assert (parse_version(spelled(first)) == parse_version(spelled(second))) == (
        pep_440_key(first) == pep_440_key(second)
    )


@given(_parts, st.from_regex(r"[a-z0-9]{1,8}(\.[a-z0-9]{1,8}){0,2}", fullmatch=True))
def test_a_local_label_never_makes_a_release_newer(parts: Parts, label: str) -> None:
    assert not is_newer(f"{spelled(parts)}+{label}", spelled(parts))
    assert not is_newer(spelled(parts), f"{spelled(parts)}+{label}")
