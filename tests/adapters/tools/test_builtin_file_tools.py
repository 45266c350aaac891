"""read_file, write_file, edit_file and delete_file."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from ironhive.adapters.tools.files import DeleteFileTool, EditFileTool, ReadFileTool, WriteFileTool
from ironhive.domain.errors import ToolArgumentError, ToolError

# --- read_file ---------------------------------------------------------------------------------------------------


async def test_read_file_returns_the_whole_text(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
    assert await ReadFileTool(tmp_path).invoke({"path": "a.txt"}) == "hello\nworld\n"


async def test_read_file_resolves_relative_paths_against_the_root_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    elsewhere = tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "same.txt").write_text("from root")
    (elsewhere / "same.txt").write_text("from cwd")
    monkeypatch.chdir(elsewhere)
    assert await ReadFileTool(root).invoke({"path": "same.txt"}) == "from root"
    assert await ReadFileTool(root).invoke({"path": "./sub/../same.txt"}) == "from root"


async def test_read_file_accepts_absolute_paths_outside_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    root = tmp_path / "root"
    root.mkdir()
    assert await ReadFileTool(root).invoke({"path": str(outside)}) == "outside"


async def test_read_file_line_window_is_one_based(tmp_path: Path) -> None:
    (tmp_path / "lines.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    tool = ReadFileTool(tmp_path)
    assert await tool.invoke({"path": "lines.txt", "start_line": 3, "line_count": 2}) == "line 3\nline 4\n"
    assert await tool.invoke({"path": "lines.txt", "start_line": 10}) == "line 10\n"
    assert await tool.invoke({"path": "lines.txt", "line_count": 1}) == "line 1\n"


async def test_read_file_start_past_the_end_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("a\nb\n")
    with pytest.raises(ToolError, match=r"start_line 5 is past the end of short.txt \(2 lines\)"):
        await ReadFileTool(tmp_path).invoke({"path": "short.txt", "start_line": 5})


async def test_read_file_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^File not found: src/x.py$"):
        await ReadFileTool(tmp_path).invoke({"path": "src/x.py"})


async def test_read_file_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match=r"'d' is a directory"):
        await ReadFileTool(tmp_path).invoke({"path": "d"})


async def test_read_file_refuses_binary_files(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match=r"Cannot read binary file: blob.bin"):
        await ReadFileTool(tmp_path).invoke({"path": "blob.bin"})


async def test_read_file_over_one_megabyte_is_refused_whole_but_readable_in_parts(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text(("x" * 99 + "\n") * 11_000)
    tool = ReadFileTool(tmp_path)
    with pytest.raises(ToolError, match=r"File too large: big.log is 1\.0 MB \(limit 1\.0 MB\)\. Read it in parts"):
        await tool.invoke({"path": "big.log"})
    assert await tool.invoke({"path": "big.log", "start_line": 11_000, "line_count": 5}) == "x" * 99 + "\n"


async def test_read_file_decodes_utf8_with_bom_and_utf16(tmp_path: Path) -> None:
    (tmp_path / "bom.txt").write_bytes(codecs.BOM_UTF8 + "héllo".encode())
    (tmp_path / "wide.txt").write_bytes("wide text".encode("utf-16"))
    tool = ReadFileTool(tmp_path)
    assert await tool.invoke({"path": "bom.txt"}) == "héllo"
    assert await tool.invoke({"path": "wide.txt"}) == "wide text"


async def test_read_file_empty_path_is_an_argument_error(tmp_path: Path) -> None:
    with pytest.raises(ToolArgumentError, match=r"'path'"):
        await ReadFileTool(tmp_path).invoke({"path": "  "})


# --- write_file --------------------------------------------------------------------------------------------------


async def test_write_file_creates_parent_directories(tmp_path: Path) -> None:
    result = await WriteFileTool(tmp_path).invoke({"path": "a/b/c.txt", "content": "data\n"})
    assert result == "Successfully wrote to file: a/b/c.txt"
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "data\n"


async def test_write_file_overwrites_then_appends(tmp_path: Path) -> None:
    tool = WriteFileTool(tmp_path)
    await tool.invoke({"path": "f.txt", "content": "first\n"})
    await tool.invoke({"path": "f.txt", "content": "second\n"})
    result = await tool.invoke({"path": "f.txt", "content": "third\n", "append": "true"})
    assert result == "Successfully appended to file: f.txt"
    assert (tmp_path / "f.txt").read_text() == "second\nthird\n"


async def test_write_file_keeps_an_existing_files_crlf_and_bom(tmp_path: Path) -> None:
    target = tmp_path / "win.txt"
    target.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\n")
    await WriteFileTool(tmp_path).invoke({"path": "win.txt", "content": "three\n", "append": True})
    assert target.read_bytes() == codecs.BOM_UTF8 + b"one\r\ntwo\r\nthree\r\n"
    await WriteFileTool(tmp_path).invoke({"path": "win.txt", "content": "new\n"})
    assert target.read_bytes() == codecs.BOM_UTF8 + b"new\r\n"


async def test_write_file_to_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match=r"'d' is a directory"):
        await WriteFileTool(tmp_path).invoke({"path": "d", "content": "x"})


async def test_write_file_under_a_file_reports_the_os_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(ToolError, match=r"write_file failed"):
        await WriteFileTool(tmp_path).invoke({"path": "plain/child.txt", "content": "x"})


async def test_write_file_requires_content(tmp_path: Path) -> None:
    with pytest.raises(ToolArgumentError, match=r"required parameter 'content'"):
        await WriteFileTool(tmp_path).invoke({"path": "f.txt"})


# --- edit_file ---------------------------------------------------------------------------------------------------


async def test_edit_file_replaces_a_unique_occurrence(tmp_path: Path) -> None:
    (tmp_path / "code.py").write_text("def f():\n    return 1\n")
    result = await EditFileTool(tmp_path).invoke(
        {"path": "code.py", "old_string": "return 1", "new_string": "return 2"}
    )
    assert result == "Successfully edited code.py (1 replacement)"
    assert (tmp_path / "code.py").read_text() == "def f():\n    return 2\n"


async def test_edit_file_not_unique_without_replace_all(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError) as info:
        await EditFileTool(tmp_path).invoke({"path": "f.txt", "old_string": "x = 1", "new_string": "x = 2"})
    assert str(info.value) == "old_string occurs 3 times in f.txt; add more context or set replace_all"
    assert (tmp_path / "f.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_file_replace_all_reports_the_count(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x = 1\nx = 1\nx = 1\n")
    result = await EditFileTool(tmp_path).invoke(
        {"path": "f.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True}
    )
    assert result == "Successfully edited f.txt (3 replacements)"
    assert (tmp_path / "f.txt").read_text() == "x = 2\nx = 2\nx = 2\n"


async def test_edit_file_missing_text(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("alpha\n")
    with pytest.raises(ToolError, match=r"^old_string not found in f.txt; read the file"):
        await EditFileTool(tmp_path).invoke({"path": "f.txt", "old_string": "beta", "new_string": "gamma"})


async def test_edit_file_hints_at_a_whitespace_only_difference(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("if x:\n        go()\n")
    with pytest.raises(ToolError, match=r"^old_string not found in f.txt .*whitespace"):
        await EditFileTool(tmp_path).invoke({"path": "f.txt", "old_string": "if x:\n    go()", "new_string": "y"})


async def test_edit_file_empty_old_string_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("alpha\n")
    with pytest.raises(ToolError, match=r"old_string is empty"):
        await EditFileTool(tmp_path).invoke({"path": "f.txt", "old_string": "", "new_string": "x"})


async def test_edit_file_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^File not found: nope.txt. edit_file changes an existing file"):
        await EditFileTool(tmp_path).invoke({"path": "nope.txt", "old_string": "a", "new_string": "b"})


async def test_edit_file_keeps_crlf_and_bom(tmp_path: Path) -> None:
    target = tmp_path / "win.txt"
    target.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\nthree\r\n")
    await EditFileTool(tmp_path).invoke({"path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
    assert target.read_bytes() == codecs.BOM_UTF8 + b"1\r\n2\r\nthree\r\n"


async def test_edit_file_refuses_binary_files(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"ab\x00cd")
    with pytest.raises(ToolError, match=r"Cannot edit binary file: blob.bin"):
        await EditFileTool(tmp_path).invoke({"path": "blob.bin", "old_string": "ab", "new_string": "xy"})


async def test_edit_file_refuses_invalid_utf8_rather_than_corrupting_it(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ToolError, match=r"not valid utf-8 text"):
        await EditFileTool(tmp_path).invoke({"path": "latin.txt", "old_string": "caf", "new_string": "CAF"})
    assert (tmp_path / "latin.txt").read_bytes() == "café".encode("latin-1")


# --- delete_file -------------------------------------------------------------------------------------------------


async def test_delete_file_deletes_a_file(tmp_path: Path) -> None:
    (tmp_path / "gone.txt").write_text("x")
    assert await DeleteFileTool(tmp_path).invoke({"path": "gone.txt"}) == "Successfully deleted file: gone.txt"
    assert not (tmp_path / "gone.txt").exists()


async def test_delete_file_refuses_directories(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match=r"'d' is a directory; delete_file deletes files only"):
        await DeleteFileTool(tmp_path).invoke({"path": "d"})
    assert (tmp_path / "d").is_dir()


async def test_delete_file_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^File not found: nope.txt$"):
        await DeleteFileTool(tmp_path).invoke({"path": "nope.txt"})


async def test_delete_file_removes_a_link_not_its_target_directory(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    await DeleteFileTool(tmp_path).invoke({"path": "link"})
    assert not (tmp_path / "link").exists()
    assert (tmp_path / "real").is_dir()


async def test_a_nul_character_in_a_path_is_an_argument_error(tmp_path: Path) -> None:
    with pytest.raises(ToolArgumentError, match=r"NUL character") as info:
        await DeleteFileTool(tmp_path).invoke({"path": "a\x00b"})
    assert info.value.parameter == "path"
