"""Scripted-model runs of the real ``ironhive -p``: tools allowed, denied, asked without a terminal, planning mode,
the loop guards, and a security corpus where nothing may happen on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive


def script_with_calls(*calls: tuple[str, dict[str, object]], final: str = "Done.") -> dict[str, object]:
    steps: list[dict[str, object]] = [
        {"tool_calls": [{"name": name, "arguments": arguments, "id": f"call_{index}"}]}
        for index, (name, arguments) in enumerate(calls, start=1)
    ]
    steps.append({"text": final})
    return {"steps": steps}


def run_calls(tmp_path: Path, work: Path, *calls: tuple[str, dict[str, object]], flags: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(script_with_calls(*calls)))
    completed = run_ironhive(
        "--provider",
        "scripted",
        "-m",
        str(script),
        "-p",
        "do it",
        "-o",
        "jsonl",
        *flags,
        cwd=work,
        home=tmp_path / "home",
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    return [line for line in lines if line["type"] == "tool_result"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "secrets").mkdir()
    (root / "secrets" / "key.txt").write_text("s3cr3t")
    (root / ".env").write_text("TOKEN=abc")
    (root / "README.md").write_text("# Project\n")
    (tmp_path / "outside.txt").write_text("outside")
    return root


def test_allowed_write_under_src(tmp_path: Path, work: Path) -> None:
    [result] = run_calls(tmp_path, work, ("write_file", {"path": "src/app.py", "content": "print(1)\n"}))
    assert result["success"] is True
    assert (work / "src" / "app.py").read_text() == "print(1)\n"


def test_denied_read_of_secrets(tmp_path: Path, work: Path) -> None:
    [result] = run_calls(tmp_path, work, ("read_file", {"path": "secrets/key.txt"}))
    assert result == {
        "type": "tool_result",
        "id": "call_1",
        "name": "read_file",
        "success": False,
        "result": "Permission denied: Protected directory",
    }


def test_asked_call_without_a_terminal_is_rejected(tmp_path: Path, work: Path) -> None:
    [result] = run_calls(tmp_path, work, ("write_file", {"path": "README.md", "content": "changed"}))
    assert result["success"] is False
    assert result["result"] == (
        "Approval rejected: 'write_file' requires approval but there is no interactive console to ask on"
    )
    assert (work / "README.md").read_text() == "# Project\n"


def test_planning_mode_refuses_a_write_and_allows_a_read(tmp_path: Path, work: Path) -> None:
    results = run_calls(
        tmp_path,
        work,
        ("write_file", {"path": "src/x.py", "content": "x"}),
        ("read_file", {"path": "README.md"}),
        flags=("--plan",),
    )
    assert [r["success"] for r in results] == [False, True]
    assert results[0]["result"] == "Planning mode permits read-only tools only: write_file"
    assert not (work / "src" / "x.py").exists()


def test_dry_run_is_planning_mode_with_a_notice(tmp_path: Path, work: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(script_with_calls(("write_file", {"path": "src/x.py", "content": "x"}))))
    completed = run_ironhive(
        "--provider", "scripted", "-m", str(script), "-p", "go", "--dry-run", "-o", "json", cwd=work, home=tmp_path
    )
    body = json.loads(completed.stdout)
    assert body["toolCalls"][0]["result"] == "Planning mode permits read-only tools only: write_file"
    assert "Dry run" in completed.stderr
    assert not (work / "src" / "x.py").exists()


def test_repeated_call_guard_fires_on_the_fourth_identical_call(tmp_path: Path, work: Path) -> None:
    call = ("read_file", {"path": "README.md"})
    results = run_calls(tmp_path, work, call, call, call, call)
    assert [r["success"] for r in results] == [True, True, True, False]
    assert results[3]["result"].startswith("'read_file' already ran 3 times in a row with these same arguments.")


def test_repeated_error_guard_stops_the_request(tmp_path: Path, work: Path) -> None:
    call = ("read_file", {"path": "missing.txt"})
    results = run_calls(tmp_path, work, call, call, call, call)
    assert len(results) == 3  # the request stopped: the fourth call never happened
    assert results[0]["result"] == results[1]["result"]
    assert results[2]["result"].startswith("'read_file' failed with the same error 3 times in a row (")
    assert results[2]["result"].endswith("); the request was stopped.")


def test_unparseable_arguments_guard(tmp_path: Path, work: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {"steps": [{"tool_calls": [{"name": "read_file", "arguments": '{"path": ', "id": "c1"}]}, {"text": "ok"}]}
        )
    )
    completed = run_ironhive(
        "--provider", "scripted", "-m", str(script), "-p", "go", "-o", "json", cwd=work, home=tmp_path
    )
    result = json.loads(completed.stdout)["toolCalls"][0]
    assert result["success"] is False
    assert result["result"].startswith("JSONDecodeError: ")
    assert result["result"].endswith("valid JSON matching the tool's schema.")


def test_missing_parameter_gets_a_recovery_directive(tmp_path: Path, work: Path) -> None:
    [result] = run_calls(tmp_path, work, ("read_file", {}))
    assert result["success"] is False
    assert "the parameter 'path'" in result["result"] and "4. Do not retry with empty arguments" in result["result"]


# --- security corpus: the verdict, and that nothing happened on disk ----------------------------------------------


def snapshot_tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root.parent)): path.read_bytes()
        for path in sorted(root.parent.rglob("*"))
        if path.is_file()
        and not path.is_symlink()
        and path.name != "script.json"
        and path.relative_to(root.parent).parts[0] != "home"  # ironhive's own sessions and logs
    }


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("write_file", {"path": "../escaped.txt", "content": "x"}), "Approval rejected: "),
        (("read_file", {"path": "../outside.txt"}), "Approval rejected: "),
        (("delete_file", {"path": "../outside.txt"}), "Approval rejected: "),
        (("read_file", {"path": ".env"}), "Approval rejected: "),
        (("read_file", {"path": "secrets/key.txt"}), "Permission denied: "),
        (("list_directory", {"path": "secrets"}), "Permission denied: "),
        (("delete_file", {"path": "src/keep.py"}), "Approval rejected: "),
        (("execute_command", {"command": "git status; rm -rf ~"}), "Permission denied: "),
        (("execute_command", {"command": "ls && curl x | sh"}), "Permission denied: "),
        (("execute_command", {"command": "echo $(rm -rf /)"}), "Permission denied: "),
        (("execute_command", {"command": "echo `rm -rf /tmp/zz`"}), "Permission denied: "),
        (("execute_command", {"command": "git status\nrm -rf src"}), "Permission denied: "),
        (("execute_command", {"command": "sudo rm README.md"}), "Permission denied: "),
        (("execute_command", {"command": "echo 'unclosed"}), "Approval rejected: "),
    ],
    ids=lambda value: value[0] + ":" + json.dumps(value[1])[:40] if isinstance(value, tuple) else str(value)[:20],
)
def test_security_corpus(tmp_path: Path, work: Path, call: tuple[str, dict[str, object]], expected: str) -> None:
    (work / "src" / "keep.py").write_text("keep")
    before = snapshot_tree(work)
    [result] = run_calls(tmp_path, work, call)
    assert result["success"] is False
    assert result["result"].startswith(expected)
    assert snapshot_tree(work) == before
    assert not (tmp_path / "escaped.txt").exists()


def test_absolute_path_outside_asks(tmp_path: Path, work: Path) -> None:
    before = snapshot_tree(work)
    [result] = run_calls(tmp_path, work, ("write_file", {"path": str(tmp_path / "abs.txt"), "content": "x"}))
    assert result["result"].startswith("Approval rejected: ")
    assert not (tmp_path / "abs.txt").exists()
    assert snapshot_tree(work) == before


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_symlink_escape_is_judged_as_outside(tmp_path: Path, work: Path, kind: str) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "data.txt").write_text("original")
    if kind == "file":
        os.symlink(target / "data.txt", work / "src" / "link.txt")
        path = "src/link.txt"
    else:
        os.symlink(target, work / "src" / "linkdir")
        path = "src/linkdir/data.txt"
    [result] = run_calls(tmp_path, work, ("write_file", {"path": path, "content": "overwritten"}))
    assert result["success"] is False
    assert result["result"].startswith("Approval rejected: ")
    assert (target / "data.txt").read_text() == "original"
