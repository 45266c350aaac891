"""Version ordering as PEP 440 defines it, checked against ``packaging`` (pytest's own dependency)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version as Reference

from ironhive.adapters.diagnostics.versions import Version, is_newer

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
    parsed = [Version.parse(text) for text in ORDERED]
    assert parsed == sorted(parsed)
    assert len(set(parsed)) == len(parsed)


@pytest.mark.parametrize(
    ("first", "second"), [("1.0", "1.0.0"), ("v1.2", "1.2"), ("1.0+local.7", "1.0"), ("1.0-1", "1.0.post1")]
)
def test_equal_spellings(first: str, second: str) -> None:
    assert Version.parse(first) == Version.parse(second)


def test_is_newer() -> None:
    assert is_newer("0.2.0", "0.1.0")
    assert not is_newer("0.1.0", "0.1.0")
    assert not is_newer("0.1.0rc1", "0.1.0")
    assert is_newer("0.1.1.dev1", "0.1.0")


@pytest.mark.parametrize("text", ["", "latest", "1..0", "1.0-beta-x"])
def test_not_a_version(text: str) -> None:
    with pytest.raises(ValueError, match="is not a version number"):
        Version.parse(text)


_numbers = st.integers(min_value=0, max_value=30)
_versions = st.builds(
    lambda release, pre, post, dev: (
        ".".join(map(str, release))
        + (f"{pre[0]}{pre[1]}" if pre else "")
        + (f".post{post}" if post is not None else "")
        + (f".dev{dev}" if dev is not None else "")
    ),
    st.lists(_numbers, min_size=1, max_size=4),
    st.none() | st.tuples(st.sampled_from(["a", "b", "rc"]), _numbers),
    st.none() | _numbers,
    st.none() | _numbers,
)


@given(_versions, _versions)
def test_agrees_with_packaging(first: str, second: str) -> None:
    assert (Version.parse(first) < Version.parse(second)) == (Reference(first) < Reference(second))
    assert (Version.parse(first) == Version.parse(second)) == (Reference(first) == Reference(second))
