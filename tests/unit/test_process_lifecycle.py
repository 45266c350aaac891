"""A non-interactive run's process: the collector paused while it starts, and an end that keeps what shutdown keeps."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the collector and the exit are process-wide)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_paused_start_is_frozen_when_it_resumes_and_collected_as_usual_after(tmp_path: Path) -> None:
    done = run_python(
        """
        import gc
        from ironhive.process_lifecycle import pause_collection, resume_collection

        pause_collection()
        assert not gc.isenabled()
        started = [object() for _ in range(1000)]
        resume_collection()
        assert gc.isenabled() and gc.get_freeze_count() >= 1000
        frozen = gc.get_freeze_count()
        resume_collection()  # once only
        assert gc.get_freeze_count() == frozen

        class Cycle:
            pass

        cycle = Cycle()
        cycle.me = cycle
        del cycle
        assert gc.collect() > 0  # made after the start: collected
        print("ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_resuming_without_a_pause_changes_nothing(tmp_path: Path) -> None:
    done = run_python(
        """
        import gc
        from ironhive.process_lifecycle import resume_collection

        before = gc.get_freeze_count()
        resume_collection()
        assert gc.isenabled() and gc.get_freeze_count() == before
        gc.disable()  # someone else's pause is not ours to end
        resume_collection()
        assert not gc.isenabled()
        print("ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


@pytest.mark.parametrize("code", [0, 1, 2, 130, 256 + 3])
def test_the_end_keeps_what_shutdown_does_threads_exit_callbacks_garbage_and_output(code: int, tmp_path: Path) -> None:
    written = tmp_path / "written.txt"
    done = run_python(
        f"""
        import atexit, sys, threading, time
        from ironhive.process_lifecycle import end_process, pause_collection

        pause_collection()  # never resumed: the end still collects

        class Holder:
            def __del__(self):
                with open({str(written)!r}, "w") as file:
                    file.write("finalized")

        holder = Holder()
        holder.me = holder  # an unreachable cycle: only a collection finalizes it
        del holder

        def late():
            time.sleep(0.2)
            sys.stdout.write("thread done\\n")

        threading.Thread(target=late).start()  # not a daemon: shutdown waits for it
        atexit.register(lambda: sys.stdout.write("exit callback\\n"))
        sys.stdout.write("buffered answer\\n")
        end_process({code})
        """,
        tmp_path,
    )
    assert done.returncode == code & 0xFF, done.stderr
    assert done.stdout == "buffered answer\nthread done\nexit callback\n"
    assert written.read_text() == "finalized"


def test_a_failed_flush_ends_with_120_as_python_does(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: the flush fails with a broken pipe
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import signal, sys\n"
                "signal.signal(signal.SIGPIPE, signal.SIG_IGN)\n"
                "from ironhive.process_lifecycle import end_process\n"
                "sys.stdout.write('lost')\n"
                "end_process(0)\n",
            ],
            stdout=write_end,
            stderr=subprocess.DEVNULL,
            env={key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"},  # stdout buffered
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 120


@pytest.mark.parametrize("code", [0, 1, 2, 130, 256 + 3])
def test_a_run_reports_its_code_after_its_output_is_flushed_and_closed(code: int) -> None:
    from ironhive.process_lifecycle import end_process

    output_read, output_write = os.pipe()
    report_read, report_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(output_read)
        os.close(report_read)
        os.dup2(output_write, 1)
        os.dup2(output_write, 2)
        os.close(output_write)
        import io

        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False))  # noqa: SIM115 - buffered, never flushed here
        sys.stdout.write("the answer\n")
        end_process(code, report_write)
    os.close(output_write)
    os.close(report_write)
    with os.fdopen(report_read, "rb") as report, os.fdopen(output_read, "rb") as output:
        reported = report.read()
        assert output.read() == b"the answer\n"  # flushed, and at its end: every copy of the output is closed
    _, status = os.waitpid(pid, 0)
    assert reported == str(code & 0xFF).encode()
    assert os.waitstatus_to_exitcode(status) == code & 0xFF
