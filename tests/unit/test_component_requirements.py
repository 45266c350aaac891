"""The test suite's component helper: a missing component skips with its install command, fails where CI is set."""

from __future__ import annotations

import asyncio
import inspect
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.tools.sandbox import SandboxProbe
from tests.support.components import Component, bubblewrap, in_ci, npm_lock_installed, npm_packages, require_component

MISSING = Component(name="Widget", install="apt-get install widget", probe=lambda: "no widget on PATH")
PRESENT = Component(name="Widget", install="apt-get install widget", probe=lambda: None)


@pytest.mark.parametrize("value", ["", "0", "false", " False ", "   "])
def test_ci_is_off_when_unset_empty_or_false(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert not in_ci()
    monkeypatch.delenv("CI")
    assert not in_ci()


@pytest.mark.parametrize("value", ["true", "1", "yes", "github-actions"])
def test_ci_is_on_for_any_other_value(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci()


def test_a_missing_component_skips_with_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"^missing Widget \(no widget on PATH\); install with: apt-get"):
        MISSING.require()
    with pytest.raises(pytest.skip.Exception, match="install with: npm ci"):
        require_component("packages", lambda: "stale", "npm ci")
    PRESENT.require()  # nothing happens


def test_in_ci_a_missing_component_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"install with: apt-get install widget \(CI is set"):
        MISSING.require()
    PRESENT.require()


def test_an_installed_but_unusable_component_skips_even_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    unusable = Component(name="Widget", install="x", probe=lambda: None, unusable=lambda: "no user namespaces")
    with pytest.raises(pytest.skip.Exception, match=r"^no user namespaces$"):
        unusable.require()


def _sync_test(tmp_path: Path) -> str:
    return str(tmp_path)


async def _async_test(tmp_path: Path) -> str:
    return str(tmp_path)


def test_the_decorator_keeps_a_test_whose_component_is_there() -> None:
    assert PRESENT(_sync_test) is _sync_test


def test_the_decorator_marks_a_test_skipped_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)

    def needs_widget() -> None:
        raise AssertionError("a skipped test does not run")

    decorated = MISSING(needs_widget)
    assert decorated is needs_widget
    [mark] = decorated.pytestmark  # type: ignore[attr-defined]
    assert mark.name == "skip" and mark.kwargs["reason"].startswith("missing Widget")


def test_the_decorator_fails_sync_and_async_tests_in_ci_keeping_their_fixtures(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "1")
    failing = MISSING(_sync_test)
    failing_async = MISSING(_async_test)
    assert list(inspect.signature(failing).parameters) == ["tmp_path"]
    assert inspect.iscoroutinefunction(failing_async)
    with pytest.raises(pytest.fail.Exception, match="missing Widget"):
        failing(tmp_path)
    with pytest.raises(pytest.fail.Exception, match="missing Widget"):
        asyncio.run(failing_async(tmp_path))


def _fake_bwrap(folder: Path) -> str:
    (folder / "bwrap").write_text("#!/bin/sh\nexit 1\n")
    (folder / "bwrap").chmod(0o755)
    return str(folder)


def test_bubblewrap_not_installed_is_missing_but_unusable_is_a_skip(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    refused = SandboxProbe(executable=None, reason="bwrap cannot create the sandbox: no namespaces")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"missing bubblewrap \(no bwrap on PATH\).*bubblewrap"):
        bubblewrap(refused).require()
    monkeypatch.setenv("PATH", _fake_bwrap(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=r"^no command sandbox here: bwrap cannot create the sandbox"):
        bubblewrap(refused).require()
    bubblewrap(SandboxProbe(executable=str(tmp_path / "bwrap"))).require()


def _write_package(modules: Path, name: str, version: str) -> None:
    (modules / name).mkdir(parents=True)
    (modules / name / "package.json").write_text(json.dumps({"name": name, "version": version}))


def test_npm_packages_name_each_missing_or_wrong_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", _fake_bwrap(tmp_path))  # any folder; node is looked up on it
    wanted = {"@scope/one": "1.0.0", "two": "2.0.0"}
    assert npm_packages("servers", tmp_path, wanted).probe() == "no node on PATH"
    (tmp_path / "node").write_text("#!/bin/sh\n")
    (tmp_path / "node").chmod(0o755)
    component = npm_packages("servers", tmp_path, wanted)
    assert component.install.endswith("--no-audit --no-fund @scope/one@1.0.0 two@2.0.0")
    assert component.probe() == f"not installed in {tmp_path}: @scope/one@1.0.0, two@2.0.0"
    _write_package(tmp_path / "node_modules", "@scope/one", "1.0.0")
    _write_package(tmp_path / "node_modules", "two", "1.9.0")
    assert component.probe() == f"not installed in {tmp_path}: two@2.0.0 (found 1.9.0)"


VERSIONS = st.sampled_from(["1.0.0", "1.0.1", "2.0.0"])
NAMES = st.sampled_from(["a", "b", "@s/c", "d", "e"])
LOCKED = st.dictionaries(NAMES, st.tuples(VERSIONS, st.booleans()), max_size=5)  # name -> (version, optional)
INSTALLED = st.dictionaries(NAMES, VERSIONS, max_size=5)


@given(locked=LOCKED, installed=INSTALLED)
def test_the_lock_matches_exactly_when_every_needed_package_is_installed_at_its_locked_version(
    locked: dict[str, tuple[str, bool]], installed: dict[str, str]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "node_modules").mkdir()
        lock = {"": {"name": "sample"}} | {
            f"node_modules/{name}": {"version": version, **({"optional": True} if optional else {})}
            for name, (version, optional) in locked.items()
        }
        (root / "package-lock.json").write_text(json.dumps({"lockfileVersion": 3, "packages": lock}))
        record = {f"node_modules/{name}": {"version": version} for name, version in installed.items()}
        (root / "node_modules" / ".package-lock.json").write_text(json.dumps({"packages": record}))
        problem = npm_lock_installed("sample", root, "npm ci").probe()
    stale = {
        name
        for name, (version, optional) in locked.items()
        if installed.get(name) != version and not (optional and name not in installed)
    }
    assert (problem is None) == (not stale)
    if stale:
        in_lock_order = [name for name in locked if name in stale]
        assert problem == f"node_modules does not match package-lock.json: {', '.join(in_lock_order)}"


def test_a_never_installed_folder_is_missing(tmp_path: Path) -> None:
    (tmp_path / "package-lock.json").write_text(json.dumps({"packages": {}}))
    assert npm_lock_installed("sample", tmp_path, "npm ci").probe() == f"no {tmp_path / 'node_modules'}"
    assert "cannot read" in str(npm_lock_installed("sample", tmp_path / "absent", "npm ci").probe())
