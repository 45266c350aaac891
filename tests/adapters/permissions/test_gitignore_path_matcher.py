"""GitIgnorePathMatcher: gitignore-style path patterns, case-insensitive, never raising."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher
from ironhive.ports.matching import PathPatternMatcher


@pytest.fixture(scope="module")
def matcher() -> GitIgnorePathMatcher:
    return GitIgnorePathMatcher()


def test_fits_the_port() -> None:
    assert isinstance(GitIgnorePathMatcher(), PathPatternMatcher)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # a pattern without "/" matches at any depth (the original's "*.json" only matched the root)
        ("*.json", "c.json", True),
        ("*.json", "a/b/c.json", True),
        ("*.json", "a/b/c.jsonx", False),
        (".env*", "deploy/.env.local", True),
        ("*.env", "prod.env", True),
        # ** crosses directories; "**/" also matches zero directories
        ("**/*", "a", True),
        ("**/*", "a/b/c.txt", True),
        ("**/secrets/**", "secrets/key.pem", True),
        ("**/secrets/**", "x/y/secrets/a/b", True),
        ("**/secrets/**", "secrets/", True),  # the directory itself, marked with a trailing slash
        ("**/secrets/**", "notsecrets/key", False),
        ("src/**/*", "src/a/b.py", True),
        ("src/**/*", "lib/src/b.py", False),  # a pattern with a "/" is anchored
        ("secrets/**", "secrets/a", True),
        ("secrets/**", "a/secrets/b", False),
        # a leading "/" anchors to the start
        ("/x", "x", True),
        ("/x", "x/y", True),  # covering a directory covers its contents
        ("/x", "a/x", False),
        ("x", "a/x", True),
        # absolute paths (external_directory): the leading "/" is the filesystem root
        ("/tmp/**", "/tmp/a/b", True),
        ("/tmp/**", "/var/tmp/a", False),
        ("**/.ssh/**", "/home/me/.ssh/id_ed25519", True),
        # case-insensitive
        ("*.JSON", "A/B.json", True),
        ("SRC/**", "src/Main.py", True),
        # * and ? stay inside one segment when the pattern has a "/"
        ("a/*.py", "a/b.py", True),
        ("a/?.py", "a/b.py", True),
        ("a/?.py", "a/bc.py", False),
        # nothing matches the empty path (the working directory itself)
        ("**", "", False),
    ],
)
def test_gitignore_semantics(matcher: GitIgnorePathMatcher, pattern: str, path: str, expected: bool) -> None:
    assert matcher.matches(pattern, path) is expected


@pytest.mark.parametrize("pattern", ["\\", "[z-a]", "!negated", "#comment", "   "])
def test_unusable_patterns_match_nothing_and_are_explained(matcher: GitIgnorePathMatcher, pattern: str) -> None:
    assert matcher.matches(pattern, "anything") is False
    assert GitIgnorePathMatcher.compile_error(pattern)


def test_usable_pattern_has_no_compile_error() -> None:
    assert GitIgnorePathMatcher.compile_error("**/secrets/**") is None


def test_compiled_patterns_are_cached() -> None:
    matcher = GitIgnorePathMatcher()
    matcher.matches("*.py", "a.py")
    first = matcher._compiled["*.py"]
    matcher.matches("*.py", "b/c.py")
    assert matcher._compiled["*.py"] is first
    assert len(matcher._compiled) == 1


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.text(alphabet=st.one_of(st.sampled_from(list("*?[]!#/\\. -az")), st.characters()), max_size=30),
    path=st.text(max_size=40),
)
def test_never_raises(pattern: str, path: str) -> None:
    assert GitIgnorePathMatcher().matches(pattern, path) in (True, False)
