"""The warm path's pieces without a real run: directory safety, the peer check, the wire, routing and settings."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from ironhive.daemon import client as client_module
from ironhive.daemon.client import is_warm_command, strip_no_daemon
from ironhive.daemon.paths import (
    MAX_SOCKET_PATH,
    UnsafeDirectoryError,
    check_private_directory,
    ensure_private_directory,
    runtime_directory,
    socket_path,
)
from ironhive.daemon.protocol import peer_uid, receive, send
from ironhive.daemon.server import Server, _take_lock
from ironhive.daemon.settings import decide, refresh

UID = os.getuid()


def private(path: Path) -> Path:
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return path


# -- the directory ---------------------------------------------------------------------------------------------------


def test_the_runtime_directory_is_under_xdg_runtime_dir_when_the_user_owns_it(tmp_path: Path) -> None:
    runtime = private(tmp_path / "xdg")
    assert runtime_directory({"XDG_RUNTIME_DIR": str(runtime)}, str(tmp_path), UID) == str(runtime / "ironhive")
    # owned by someone else (as seen by another uid), relative, or missing: the home's directory
    home_directory = str(tmp_path / ".ironhive" / "run")
    assert runtime_directory({"XDG_RUNTIME_DIR": str(runtime)}, str(tmp_path), UID + 1) == home_directory
    assert runtime_directory({"XDG_RUNTIME_DIR": "relative"}, str(tmp_path), UID) == home_directory
    assert runtime_directory({}, str(tmp_path), UID) == home_directory


def test_a_home_too_long_for_a_socket_path_falls_back_to_a_short_directory(tmp_path: Path) -> None:
    long_home = str(tmp_path / ("h" * 120))
    directory = runtime_directory({}, long_home, UID)
    assert directory == f"/tmp/ironhive-{UID}"
    assert len(socket_path(directory)) <= MAX_SOCKET_PATH


def test_a_new_directory_is_created_0700_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        ensure_private_directory(str(tmp_path / "parent" / "run"), UID)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "parent" / "run").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "parent").stat().st_mode) == 0o700


def test_a_loose_directory_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    loose = tmp_path / "run"
    loose.mkdir()
    os.chmod(loose, 0o755)
    with pytest.raises(UnsafeDirectoryError, match="mode 755"):
        ensure_private_directory(str(loose), UID)
    assert stat.S_IMODE(loose.stat().st_mode) == 0o755


def test_a_directory_of_another_user_or_a_link_is_refused(tmp_path: Path) -> None:
    mine = private(tmp_path / "run")
    with pytest.raises(UnsafeDirectoryError, match="another user"):
        check_private_directory(str(mine), UID + 1)
    link = tmp_path / "link"
    link.symlink_to(mine)
    with pytest.raises(UnsafeDirectoryError, match="not a directory"):
        check_private_directory(str(link), UID)
    check_private_directory(str(mine), UID)


# -- the server's socket and the peer check --------------------------------------------------------------------------


@pytest.fixture
def listening(tmp_path: Path):
    directory = private(tmp_path / "run")
    server = Server(str(directory), 60.0, check_peer=lambda _sock: UID + 1)  # every peer looks like another user
    lock = _take_lock(str(directory))
    assert lock is not None
    server.listen(lock)
    try:
        yield server
    finally:
        server.close_listener()
        server.selector.close()
        os.close(server.wake_read)
        os.close(server.wake_write)
        import signal

        signal.set_wakeup_fd(-1)
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_the_socket_is_0600_in_a_0700_directory(listening: Server) -> None:
    path = socket_path(listening.directory)
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(listening.directory).st_mode) == 0o700


def test_another_uid_is_refused_before_anything_is_read_or_forked(listening: Server) -> None:
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with peer:
        peer.connect(socket_path(listening.directory))
        send(peer, {"op": "status"})
        assert listening._handle("accept") is None
        try:
            answer = peer.recv(1)
        except ConnectionResetError:  # closed with the request unread
            answer = b""
        assert answer == b""  # no answer
    assert listening.runs == {} and listening.served == 0


def test_the_client_refuses_a_server_run_by_another_uid(listening: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    accepted = client_module.connect(listening.directory, UID)  # the real check: this very user
    assert accepted is not None
    accepted.close()
    monkeypatch.setattr(client_module, "peer_uid", lambda _sock: UID + 1)
    assert client_module.connect(listening.directory, UID) is None


def test_frames_carry_descriptors_and_the_peer_uid() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read_end, write_end = os.pipe()
    with left, right:
        send(left, {"op": "run", "env": {"K": "v\udcff"}, "args": ["-p", "x" * 200_000]}, [write_end])
        data, fds, _flags, _address = socket.recv_fds(right, 1 << 16, 4)
        message = receive(right, data)
        assert peer_uid(right) == UID
    assert message == {"op": "run", "env": {"K": "v\udcff"}, "args": ["-p", "x" * 200_000]}
    os.write(fds[0], b"through")
    assert os.read(read_end, 16) == b"through"
    for fd in (*fds, read_end, write_end):
        os.close(fd)


# -- which runs, and whether -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "terminal", "warm"),
    [
        (["-p", "hi"], True, True),
        (["--prompt=hi", "-o", "json"], True, True),
        ([], False, True),
        (["-o", "json"], False, True),
        ([], True, False),
        (["-m", "x"], True, False),
        (["-p", "hi", "--help"], True, False),
        (["run", "hi"], True, True),
        (["run", "--server"], False, False),
        (["run", "--http", "http://127.0.0.1:1"], False, False),
        (["models"], True, True),
        (["sessions", "list"], True, True),
        (["get", "openai.model"], True, True),
        (["set", "daemon.enabled", "false"], True, True),
        (["config"], True, True),
        (["doctor"], True, True),
        (["daemon", "status"], False, False),
        (["mcp", "list"], False, False),
        (["trust"], False, False),
        (["completion", "bash"], True, False),
        (["explain this repo"], True, True),
        (["explain this repo", "-o", "json"], False, True),
        (["explain this repo", "--help"], True, False),
    ],
)
def test_only_non_interactive_commands_go_warm(args: list[str], terminal: bool, warm: bool) -> None:
    assert is_warm_command(args, terminal) is warm


def test_every_command_is_known_to_the_client_so_no_command_is_taken_for_a_prompt() -> None:
    from ironhive.cli.app import command_names
    from ironhive.daemon.client import DIRECT_COMMANDS, WARM_COMMANDS

    assert set(command_names()) == WARM_COMMANDS | DIRECT_COMMANDS | {"run"}


def test_the_no_daemon_flag_is_taken_out_unless_it_is_a_value() -> None:
    assert strip_no_daemon(["--no-daemon", "-p", "hi"]) == (["-p", "hi"], True)
    assert strip_no_daemon(["-p", "hi", "--no-daemon"]) == (["-p", "hi"], True)
    assert strip_no_daemon(["-p", "--no-daemon"]) == (["-p", "--no-daemon"], False)
    assert strip_no_daemon(["run", "--", "--no-daemon"]) == (["run", "--", "--no-daemon"], False)


def test_the_variable_wins_then_the_config_then_ci(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert decide({}, home).enabled is True
    assert decide({"CI": "true"}, home).enabled is False
    assert decide({"CI": "true", "IRONHIVE_DAEMON": "1"}, home).enabled is True
    assert decide({"IRONHIVE_DAEMON": "0"}, home).enabled is False
    assert decide({}, home, no_daemon_flag=True).enabled is False


def test_the_config_is_read_through_a_cache_refreshed_after_a_direct_run(tmp_path: Path) -> None:
    home = str(tmp_path)
    config = tmp_path / ".ironhive" / "config.yaml"
    config.parent.mkdir()
    config.write_text("openai:\n  model: gpt-test\n")
    assert decide({}, home).refresh is False  # no daemon section: the defaults, nothing to parse
    config.write_text("daemon:\n  enabled: true\n  idleSeconds: 42\n")
    first = decide({"CI": "1"}, home)
    assert (first.enabled, first.refresh) == (False, True)  # changed: direct this time
    assert refresh(home) == (True, 42.0)
    second = decide({"CI": "1"}, home)
    assert (second.enabled, second.idle_seconds, second.refresh) == (True, 42.0, False)
    config.write_text("daemon:\n  enabled: false\n")
    assert decide({}, home).refresh is True
    assert refresh(home) == (False, 300.0)
    assert decide({}, home).enabled is False
    assert decide({"IRONHIVE_DAEMON": "1"}, home).enabled is True
    config.write_text("daemon:\n  enabled: 1\n")  # not a boolean: off, the run reports the error
    assert refresh(home) == (False, 300.0)


def test_source_stamps_cover_loaded_ironhive_modules_only_and_see_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    from ironhive.daemon.server import _source_stamps

    ours, theirs = tmp_path / "ours.py", tmp_path / "theirs.py"
    for path, name in ((ours, "ironhive.edited_for_test"), (theirs, "ironhive_lookalike_for_test")):
        path.write_text("")
        module = types.ModuleType(name)
        module.__file__ = str(path)
        monkeypatch.setitem(sys.modules, name, module)
    before = _source_stamps()
    assert str(ours) in before and str(theirs) not in before
    loaded = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
    assert set(before) == {path for name, path in loaded.items() if path and name.partition(".")[0] == "ironhive"}
    os.utime(ours, ns=(before[str(ours)] + 10**9, before[str(ours)] + 10**9))  # an edit a second later
    after = _source_stamps()
    assert after != before and after[str(ours)] == before[str(ours)] + 10**9
