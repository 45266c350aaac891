"""The real ``ironhive``: the file tools leave out node_modules/, virtualenvs and what .gitignore ignores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import run_ironhive

PROJECT = {
    ".gitignore": "dist/\n*.log\n",
    "src/app.py": "# TODO: ship it\n",
    "node_modules/left-pad/index.js": "// TODO: pad left\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
    ".venv/lib/python3.11/site-packages/lib.py": "# TODO: vendored\n",
    "tools-env/pyvenv.cfg": "home = /usr/bin\n",
    "tools-env/lib/site.py": "# TODO: another virtualenv\n",
    "dist/bundle.js": "// TODO: built\n",
    "debug.log": "TODO: logged\n",
}


def _results(tmp_path: Path, work: Path, calls: list[tuple[str, dict[str, object]]]) -> list[dict[str, Any]]:
    numbered = [{"name": name, "arguments": arguments, "id": f"call_{i}"} for i, (name, arguments) in enumerate(calls)]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": numbered}, {"text": "Done."}]}))
    completed = run_ironhive(
        "--provider", "scripted", "-m", str(script), "-p", "find TODOs", "-o", "jsonl", cwd=work, home=tmp_path / "home"
    )
    assert completed.returncode == 0, completed.stderr
    results = [line for line in map(json.loads, completed.stdout.splitlines()) if line["type"] == "tool_result"]
    assert len(results) == len(calls), completed.stdout
    return results


def test_grep_glob_and_list_leave_out_ignored_files_and_include_them_on_request(tmp_path: Path, work: Path) -> None:
    for relative, content in PROJECT.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_text(content)
    grep, everything, glob, listing, read = _results(
        tmp_path,
        work,
        [
            ("grep_files", {"pattern": "TODO"}),
            ("grep_files", {"pattern": "TODO", "include_ignored": True}),
            ("glob_files", {"pattern": "**/*.{py,js}"}),
            ("list_directory", {"path": "."}),
            ("read_file", {"path": "dist/bundle.js"}),
        ],
    )
    assert grep["success"] is True
    lines = grep["result"].splitlines()
    assert lines[:2] == ["Found 1 matches in 1 files:", "src/app.py:1: # TODO: ship it"]
    assert lines[2].startswith("(5 files ignored by .gitignore, .ignore or the built-in list")
    assert "include_ignored=true" in lines[2]
    assert len(lines) == 3
    assert everything["result"].splitlines()[0] == "Found 6 matches in 6 files:"
    assert glob["result"].splitlines()[:2] == ["Found 1 files matching '**/*.{py,js}':", "src/app.py"]
    listed = listing["result"].splitlines()
    assert listed[:2] == ["[DIR]  src/", "[FILE] .gitignore (12 B)"]
    assert listed[2].startswith("(5 entries ignored by") and len(listed) == 3
    assert read["success"] is True and read["result"] == "// TODO: built\n"
