"""The bounded reader: regular files only, a size limit, YAML and JSON of bounded shape, each refusal naming it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from ironhive.adapters.config.files import YamlSyntaxError, read_yaml_mapping
from ironhive.adapters.config.safe_files import (
    MAX_FILE_BYTES,
    JsonNestingError,
    UnsafeFileError,
    YamlLimitError,
    load_json,
    load_yaml,
    read_limited_bytes,
    read_limited_text,
)

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_a_regular_file_is_read_and_a_missing_one_is_none(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert read_limited_bytes(path) == b"\xef\xbb\xbfa: 1\n"
    assert read_limited_text(path) == "a: 1\n"
    assert read_limited_bytes(tmp_path / "missing.yaml") is None
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert read_limited_bytes(tmp_path / "dangling") is None


def test_a_symlink_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_text("a: 1\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert read_yaml_mapping(tmp_path / "link.yaml") == {"a": 1}


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "permissions.yaml"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(UnsafeFileError, match=r"Refusing to read .*permissions\.yaml: it is a FIFO"):
        read_limited_bytes(fifo)
    assert time.monotonic() - started < 2


@pytest.mark.timeout(10)
def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / ".env"
    link.symlink_to("/dev/zero")
    with pytest.raises(UnsafeFileError, match=r"\.env: it is a character device, not a regular file") as caught:
        read_limited_bytes(link)
    assert caught.value.path == link


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeFileError, match="it is a directory"):
        read_limited_bytes(tmp_path)


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(UnsafeFileError, match=r"huge\.yaml: it is larger than 1\.0 MiB"):
        read_limited_bytes(path)
    path.write_bytes(b"#" * MAX_FILE_BYTES)
    assert len(read_limited_bytes(path) or b"") == MAX_FILE_BYTES
    with pytest.raises(UnsafeFileError, match="larger than 10 bytes"):
        read_limited_bytes(path, limit=10)


def test_text_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(UnsafeFileError, match=r"config\.yaml: it is not UTF-8 text"):
        read_limited_text(path)


# -- YAML -----------------------------------------------------------------------------------------------------------


def test_ordinary_yaml_loads_as_safe_load_does() -> None:
    text = "a: {b: [1, 2.5, true, null, '3']}\nbase: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("version: 1.0\n", strings_only=True) == {"version": "1.0"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: 1\nb: 2\na: 3\n", "duplicate key 'a'"),
        ("top:\n  x: 1\n  x: 2\n", "duplicate key 'x'"),
        ("a: " + "[" * 10000 + "]" * 10000, "nested deeper than 64 levels"),
        ("".join("  " * depth + f"k{depth}:\n" for depth in range(100)), "nested deeper than 64 levels"),
        (BOMB, "aliases expand to more than 100000 values"),
        ("a: &a [*a]\n", "an alias refers to itself"),
        ("a: &a x\n" + "".join(f"k{index}: *a\n" for index in range(101)), "more than 100 aliases"),
    ],
    ids=["duplicate", "nested-duplicate", "deep-flow", "deep-block", "alias-bomb", "alias-cycle", "many-aliases"],
)
@pytest.mark.timeout(10)
def test_hostile_yaml_is_refused_quickly_with_a_line(text: str, problem: str) -> None:
    started = time.monotonic()
    with pytest.raises(YamlLimitError) as caught:
        load_yaml(text)
    assert time.monotonic() - started < 3
    assert caught.value.problem == problem
    assert caught.value.problem_mark is not None


def test_a_duplicate_key_in_a_config_file_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("openai:\n  model: a\n  model: b\n")
    with pytest.raises(YamlSyntaxError, match=r"Malformed YAML in .*config\.yaml:3: duplicate key 'model'"):
        read_yaml_mapping(path)


def test_the_same_key_through_a_merge_is_no_duplicate() -> None:
    assert load_yaml("base: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n") == {"base": {"x": 1}, "c": {"x": 2}}


# -- JSON -----------------------------------------------------------------------------------------------------------


def test_json_nesting_is_bounded_and_strings_do_not_count() -> None:
    assert load_json('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}') == {
        "a": "[" * 76
    }
    deep = "[" * 65 + "]" * 65
    with pytest.raises(JsonNestingError) as caught:
        load_json("\n" + deep)
    assert caught.value.line == 2
    assert load_json("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)
