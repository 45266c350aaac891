"""The ACP surface's model and mode options, and the file changes that reach the editor (diffs, write-through)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acp.exceptions import RequestError
from acp.schema import ContentToolCallContent, FileEditToolCallContent
from hypothesis import given
from hypothesis import strategies as st

from ironhive.acp.config_options import ModelValue, find_value, merged, mode_option, model_option
from ironhive.acp.editor_writes import MISSING, EditorWriteTool, FileChange, FileChanges, read_text
from ironhive.acp.session import MODES
from ironhive.acp.updates import call_finished
from ironhive.adapters.tools.base import MAX_TEXT_BYTES
from ironhive.adapters.tools.files import EditFileTool, WriteFileTool
from ironhive.domain.errors import ToolError
from ironhive.domain.permissions.paths import ResolvedPath
from ironhive.domain.turn import ToolCallRecord

names = st.text(alphabet="abcAB-:./0", min_size=1, max_size=8)
models = st.builds(ModelValue, st.sampled_from(["openai", "anthropic", "ollama"]), names)


def _key(model: ModelValue) -> tuple[str, str]:
    return model.provider, model.model.strip().casefold().removesuffix(":latest")


@given(st.lists(models, max_size=8), st.lists(models, max_size=8))
def test_merged_keeps_each_model_once_in_first_seen_order(first: list[ModelValue], second: list[ModelValue]) -> None:
    result = merged(first, second)
    keys = [_key(model) for model in result]
    assert len(keys) == len(set(keys))
    assert set(keys) == {_key(model) for model in [*first, *second]}
    expected: list[ModelValue] = []
    for model in [*first, *second]:
        if _key(model) not in {_key(kept) for kept in expected}:
            expected.append(model)
    assert result == expected


@given(st.lists(models, max_size=8), models)
def test_the_current_model_is_offered_first_and_every_value_finds_its_model(
    offered: list[ModelValue], current: ModelValue
) -> None:
    option = model_option(offered, current)
    assert option.current_value == current.value == option.options[0].value
    assert option.category == "model" and option.type == "select"
    listed = merged([current], offered)
    for choice in option.options:
        found = find_value(listed, choice.value)
        assert found is not None and found.value == choice.value
    assert find_value(listed, current.value + "\0") is None


def test_the_mode_option_offers_the_session_modes() -> None:
    option = mode_option(MODES, "plan")
    assert option.current_value == "plan" and [choice.value for choice in option.options] == ["default", "plan"]


def resolved(path: Path) -> ResolvedPath:
    return ResolvedPath(full=str(path), external=False)


def test_read_text_takes_only_one_named_regular_utf8_file(tmp_path: Path) -> None:
    (tmp_path / "plain.md").write_text("héllo\r\n")
    assert read_text(resolved(tmp_path / "plain.md")) == "héllo\r\n"
    assert read_text(resolved(tmp_path / "missing.md")) is MISSING
    (tmp_path / "bom.md").write_bytes(b"\xef\xbb\xbfhi")
    (tmp_path / "latin.md").write_bytes(b"caf\xe9")
    (tmp_path / "big.md").write_bytes(b"x" * (MAX_TEXT_BYTES + 1))
    (tmp_path / "two.md").write_text("two")
    os.link(tmp_path / "two.md", tmp_path / "other-name.md")
    (tmp_path / "link.md").symlink_to(tmp_path / "plain.md")
    (tmp_path / "folder").mkdir()
    for name in ("bom.md", "latin.md", "big.md", "two.md", "link.md", "folder"):
        assert read_text(resolved(tmp_path / name)) is None, name


def test_changes_are_taken_oldest_first_per_tool_and_path() -> None:
    changes = FileChanges()
    first, second = (FileChange(path="/p/a", old_text=None, new_text=text) for text in ("1", "2"))
    changes.add("write_file", "a", first)
    changes.add("write_file", "a", second)
    assert changes.take("edit_file", "a") is None
    assert changes.take("write_file", "a") is first and changes.take("write_file", "a") is second
    changes.add("write_file", "a", first)
    changes.clear()
    assert changes.take("write_file", "a") is None


def test_a_finished_call_shows_its_change_as_a_diff_before_its_output() -> None:
    record = ToolCallRecord(call_id="w", name="write_file", arguments_text="", result="ok", success=True)
    update = call_finished(record, FileChange(path="/p/a.md", old_text="A", new_text="B"))
    assert update.content is not None
    diff, text = update.content
    assert isinstance(diff, FileEditToolCallContent) and (diff.path, diff.old_text, diff.new_text) == (
        "/p/a.md",
        "A",
        "B",
    )
    assert isinstance(text, ContentToolCallContent)
    assert call_finished(record).content is not None and len(call_finished(record).content or []) == 1


class Editor:
    def __init__(self, fail: bool = False) -> None:
        self.writes: list[tuple[str, str]] = []
        self.fail = fail

    async def write(self, path: str, content: str) -> None:
        if self.fail:
            raise RequestError.internal_error({"message": "no buffer"})
        self.writes.append((path, content))


async def test_the_editor_gets_what_the_tool_wrote_and_nothing_it_refused(tmp_path: Path) -> None:
    editor, changes = Editor(), FileChanges()
    tool = EditorWriteTool(WriteFileTool(tmp_path), changes, editor.write)
    await tool.invoke({"path": "sub/../a.md", "content": "one\n"})
    target = str((tmp_path / "a.md").resolve())
    assert editor.writes == [(target, "one\n")]
    assert changes.take("write_file", "sub/../a.md") == FileChange(path=target, old_text=None, new_text="one\n")
    (tmp_path / "b.md").write_text("b")
    os.link(tmp_path / "b.md", tmp_path / "b-twin.md")
    with pytest.raises(ToolError):
        await tool.invoke({"path": "b.md", "content": "changed"})
    edit = EditorWriteTool(EditFileTool(tmp_path), changes, editor.write)
    with pytest.raises(ToolError):
        await edit.invoke({"path": "a.md", "old_string": "absent", "new_string": "x"})
    assert editor.writes == [(target, "one\n")] and changes.take("edit_file", "a.md") is None
    assert tool.spec == WriteFileTool(tmp_path).spec


async def test_an_editor_that_cannot_write_leaves_the_disk_write_and_its_diff(tmp_path: Path) -> None:
    changes = FileChanges()
    (tmp_path / "a.md").write_text("old")
    tool = EditorWriteTool(EditFileTool(tmp_path), changes, Editor(fail=True).write)
    result = await tool.invoke({"path": "a.md", "old_string": "old", "new_string": "new"})
    assert "Successfully edited" in result and (tmp_path / "a.md").read_text() == "new"
    change = changes.take("edit_file", "a.md")
    assert change is not None and (change.old_text, change.new_text) == ("old", "new")
