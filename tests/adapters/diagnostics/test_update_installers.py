"""The package index ``update`` asks, how the installer is recognised, and the upgrade command for each one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ironhive.adapters.diagnostics.installer import (
    PIPX_MARKER,
    UV_TOOL_MARKER,
    classify,
    detect_installation,
    upgrade_command,
)
from ironhive.adapters.diagnostics.releases import DEFAULT_INDEX, PackageIndex, ReleaseCheckError, resolve_index
from ironhive.domain.errors import ConfigurationError

INDEX = ["--index-url", "https://i.example/simple/"]
EDITABLE = json.dumps({"dir_info": {"editable": True}, "url": "file:///src/ironhive"})


@pytest.mark.parametrize(
    ("option", "base"),
    [
        ("https://pypi.example", "https://pypi.example"),
        ("https://pypi.example/", "https://pypi.example"),
        ("https://pypi.example/simple/", "https://pypi.example"),
        ("https://mirror.example/root/pypi/simple", "https://mirror.example/root/pypi"),
    ],
)
def test_index_url_option(option: str, base: str) -> None:
    index = resolve_index(option, {"PIP_INDEX_URL": "https://ignored.example/simple"})
    assert (index.base, index.explicit) == (base, True)
    assert index.json_url == f"{base}/pypi/ironhive/json"
    assert index.simple_url == f"{base}/simple/"


@pytest.mark.parametrize(
    ("pip_index_url", "base"),
    [
        ("https://test.pypi.org/simple/", "https://test.pypi.org"),
        ("https://user:token@private.example/api/simple", "https://user:token@private.example/api"),
        ("https://private.example/packages/", DEFAULT_INDEX),  # not PyPI-like: its JSON API cannot be guessed
        ("  ", DEFAULT_INDEX),
        ("not a url/simple", DEFAULT_INDEX),
    ],
)
def test_pip_index_url(pip_index_url: str, base: str) -> None:
    index = resolve_index(None, {"PIP_INDEX_URL": pip_index_url})
    assert (index.base, index.explicit) == (base, False)


def test_credentials_are_never_shown() -> None:
    index = resolve_index(None, {"PIP_INDEX_URL": "https://user:token@private.example/simple"})
    assert index.shown == "https://***@private.example"


@pytest.mark.parametrize("option", ["file:///tmp/index", "pypi.org", "https://"])
def test_a_non_http_option_is_refused(option: str) -> None:
    with pytest.raises(ReleaseCheckError, match="--index-url must be an http"):
        resolve_index(option, {})


def test_markers_win_over_the_installer_file(tmp_path: Path) -> None:
    assert classify(tmp_path, installer="pip\n", direct_url=None).installer == "pip"
    assert classify(tmp_path, installer="uv\n", direct_url=None).installer == "uv"
    assert classify(tmp_path, installer=None, direct_url=None).installer == "pip"
    (tmp_path / UV_TOOL_MARKER).write_text("[tool]\n")
    assert classify(tmp_path, installer="uv", direct_url=None).installer == "uv-tool"
    (tmp_path / PIPX_MARKER).write_text("{}")
    assert classify(tmp_path, installer="pip", direct_url=None).installer == "pipx"


def test_editable_installs_are_recognised(tmp_path: Path) -> None:
    assert classify(tmp_path, installer="pip", direct_url=EDITABLE).editable_source == "/src/ironhive"
    wheel = json.dumps({"archive_info": {}, "url": "https://files.example/ironhive.whl"})
    assert classify(tmp_path, installer="pip", direct_url=wheel).editable_source is None
    assert classify(tmp_path, installer="pip", direct_url="{broken").editable_source is None


def test_this_environment_is_detected_from_its_dist_info(tmp_path: Path) -> None:
    installation = detect_installation(tmp_path)
    assert installation.prefix == tmp_path
    assert installation.installer in ("pip", "uv")


def _which(name: str) -> str | None:
    return f"/opt/bin/{name}"


@pytest.mark.parametrize(
    ("installer", "plain", "with_index"),
    [
        (
            "pip",
            ["/env/bin/python", "-m", "pip", "install", "--upgrade", "ironhive==2.0"],
            ["/env/bin/python", "-m", "pip", "install", "--upgrade", *INDEX, "ironhive==2.0"],
        ),
        (
            "uv",
            ["/opt/bin/uv", "pip", "install", "--python", "/env/bin/python", "--upgrade", "ironhive==2.0"],
            ["/opt/bin/uv", "pip", "install", "--python", "/env/bin/python", "--upgrade", *INDEX, "ironhive==2.0"],
        ),
        (
            "uv-tool",
            ["/opt/bin/uv", "tool", "upgrade", "ironhive"],
            ["/opt/bin/uv", "tool", "upgrade", *INDEX, "ironhive"],
        ),
        (
            "pipx",
            ["/opt/bin/pipx", "upgrade", "ironhive"],
            ["/opt/bin/pipx", "upgrade", "--pip-args=--index-url https://i.example/simple/", "ironhive"],
        ),
    ],
)
def test_upgrade_commands(tmp_path: Path, installer: str, plain: list[str], with_index: list[str]) -> None:
    markers = {"pipx": PIPX_MARKER, "uv-tool": UV_TOOL_MARKER}
    if installer in markers:
        (tmp_path / markers[installer]).write_text("")
    installation = classify(tmp_path, installer="uv" if installer == "uv" else "pip", direct_url=None)
    assert installation.installer == installer
    default_index = PackageIndex(base="https://i.example")
    explicit = PackageIndex(base="https://i.example", explicit=True)
    assert upgrade_command(installation, "2.0", default_index, python="/env/bin/python", which=_which) == plain
    assert upgrade_command(installation, "2.0", explicit, python="/env/bin/python", which=_which) == with_index


def test_a_missing_installer_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / PIPX_MARKER).write_text("{}")
    installation = classify(tmp_path, installer="pip", direct_url=None)
    with pytest.raises(ConfigurationError, match="installed with pipx, but pipx is not on PATH"):
        upgrade_command(installation, "2.0", PackageIndex(base=DEFAULT_INDEX), which=lambda name: None)
