"""``ironhive serve`` end to end: the real process on loopback, the scripted model, the API over HTTP and SSE."""

from __future__ import annotations

import json
import re
import signal
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_ironhive
from tests.support.serve_process import ServeProcess, payloads
from tests.support.server_process import ServerProcess

DELTAS = {"deltas": ["Hello", ", ", "world", "."]}
SLOW = {"deltas": [f"piece {index} " for index in range(40)], "delay_seconds": 0.25}


def write_script(work: Path, steps: Sequence[object], name: str = "script.json") -> Path:
    script = work.parent / name
    script.write_text(json.dumps({"steps": list(steps)}))
    return script


def scripted_serve(work: Path, steps: Sequence[object], *flags: str, **options: Any) -> ServeProcess:
    script = write_script(work, steps)
    return ServeProcess(
        "--provider", "scripted", "-m", str(script), *flags, cwd=work, home=work.parent / "home", **options
    )


def user_config(work: Path, text: str) -> None:
    folder = work.parent / "home" / ".ironhive"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(text)


def shell_call(call_id: str, command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute_command", "arguments": {"command": command}, "id": call_id}]}


def test_a_turn_gives_exactly_the_events_of_run_server(work: Path) -> None:
    steps = [DELTAS]
    with ServerProcess(
        "--provider",
        "scripted",
        "-m",
        str(write_script(work, steps, "direct.json")),
        cwd=work,
        home=work.parent / "home",
    ) as direct:
        assert direct.next_event()["type"] == "session_started"
        direct.user_message("hi")
        expected = direct.read_turn()
    with scripted_serve(work, steps) as server:
        session = server.new_session()
        turn_id = server.send(session, "hi")
        assert re.fullmatch(r"[0-9a-f]{32}", turn_id)
        with server.events(session) as stream:
            frames = stream.turn()
        assert payloads(frames) == expected
        assert [frame.event for frame in frames] == [event["type"] for event in expected]
        ids = [int(frame.id) for frame in frames]
        assert ids == sorted(set(ids))
        listed = server.request("GET", f"/v1/sessions/{session}").body
        assert (listed["id"], listed["first_message"], listed["message_count"]) == (session, "hi", 2)


def test_an_approval_answered_over_the_api(work: Path) -> None:
    with scripted_serve(work, [shell_call("call_1", "echo approved-run"), {"text": "Done."}]) as server:
        session = server.new_session()
        server.send(session, "run it")
        with server.events(session) as stream:
            request = stream.until("hitl_request")[-1].data
            answer = server.request(
                "POST", f"/v1/sessions/{session}/approvals", {"approved": True, "id": request["id"]}
            )
            assert answer.status == 200, answer
            rest = payloads(stream.turn())
        again = server.request("POST", f"/v1/sessions/{session}/approvals", {"approved": True, "id": request["id"]})
        assert again.status == 409 and again.body["error"]
    ends = [event for event in rest if event["type"] == "tool_end"]
    assert ends == [
        {
            "type": "tool_end",
            "tool": "execute_command",
            "success": True,
            "output": "Exit code: 0\nOutput:\napproved-run",
            "call_id": "call_1",
        }
    ]
    assert "".join(event["content"] for event in rest if event["type"] == "text_delta") == "Done."


def test_an_unanswered_approval_expires_as_a_rejection(work: Path) -> None:
    steps = [shell_call("call_1", "echo never"), {"text": "Understood."}]
    with scripted_serve(work, steps, "--approval-timeout", "1") as server:
        session = server.new_session()
        server.send(session, "run it")
        with server.events(session) as stream:
            stream.until("hitl_request")
            started = time.monotonic()
            rest = payloads(stream.turn())
        assert 0.5 < time.monotonic() - started < 10
    ends = [event for event in rest if event["type"] == "tool_end"]
    assert len(ends) == 1 and ends[0]["success"] is False
    assert rest[-1]["type"] == "turn_end"


def test_a_cancel_ends_the_running_turn(work: Path) -> None:
    with scripted_serve(work, [SLOW]) as server:
        session = server.new_session()
        turn_id = server.send(session, "go")
        with server.events(session) as stream:
            stream.until("text_delta")
            assert server.request("POST", f"/v1/sessions/{session}/cancel", {"turn_id": turn_id}).status == 200
            frames = stream.turn()
        assert len([frame for frame in frames if frame.event == "text_delta"]) < 39
        missing = server.request("POST", f"/v1/sessions/{session}/cancel", {})
        assert missing.status == 404 and missing.body["error"]


def test_a_reconnect_replays_exactly_the_missed_events(work: Path) -> None:
    with scripted_serve(work, [DELTAS, {"deltas": ["Second", " answer"]}]) as server:
        session = server.new_session()
        server.send(session, "one")
        with server.events(session) as stream:
            first = stream.turn()
        for cut in range(len(first)):
            with server.events(session, last_event_id=first[cut].id) as stream:
                assert [frame.raw for frame in stream.frames_for(len(first) - cut - 1)] == [
                    frame.raw for frame in first[cut + 1 :]
                ]
        server.send(session, "two")  # while nobody listens
        time.sleep(0.5)
        with server.events(session, after=first[-1].id) as stream:
            second = stream.turn()
            assert [frame.data.get("content") for frame in second if frame.event == "text_delta"] == [
                "Second",
                " answer",
            ]
            stream.set_timeout(1.5)
            with pytest.raises(TimeoutError):
                stream.next()  # nothing more: no event twice
        with server.events(session) as stream:
            assert [frame.raw for frame in stream.frames_for(len(first) + len(second))] == [
                frame.raw for frame in (*first, *second)
            ]


def test_heartbeats_keep_an_idle_stream_open(work: Path) -> None:
    user_config(work, "server:\n  heartbeatSeconds: 0.2\n")
    with scripted_serve(work, [DELTAS]) as server:
        session = server.new_session()
        with server.events(session) as stream:
            assert stream.read_for(1.5) == []
            assert stream.comments >= 3
            assert server.request("DELETE", f"/v1/sessions/{session}").status == 200
            stream.set_timeout(5)
            assert list(stream.frames()) == []  # the stream of a deleted session ends


def test_the_token_is_required_and_healthz_is_open(work: Path) -> None:
    with scripted_serve(work, [DELTAS]) as server:
        for token in (None, "wrong-token-wrong-token"):
            answer = server.request("GET", "/v1/sessions", token=token)
            assert answer.status == 401 and answer.body == {"error": "Missing or wrong bearer token"}
            assert answer.headers["www-authenticate"].startswith("Bearer")
        health = server.request("GET", "/healthz", token=None)
        assert health.status == 200
        assert set(health.body) == {"status", "loop_lag_ms", "running", "queued"}
        assert health.body["status"] == "ok" and 0 <= health.body["loop_lag_ms"] < 500
        assert server.token not in server.stderr.split("\n", 1)[1]  # printed once, on the line before Listening


def test_foreign_origins_and_rebinding_hosts_are_refused(work: Path) -> None:
    user_config(work, "server:\n  allowedOrigins: ['http://app.example:3000']\n")
    with scripted_serve(work, [DELTAS]) as server:
        foreign = server.request("GET", "/v1/sessions", headers={"Origin": "http://evil.example"})
        assert foreign.status == 403 and "access-control-allow-origin" not in foreign.headers
        allowed = server.request("GET", "/v1/sessions", headers={"Origin": "http://app.example:3000"})
        assert allowed.status == 200
        assert allowed.headers["access-control-allow-origin"] == "http://app.example:3000"
        preflight = server.request(
            "OPTIONS",
            "/v1/sessions",
            headers={"Origin": "http://app.example:3000", "Access-Control-Request-Method": "POST"},
            token=None,
        )
        assert preflight.status == 204 and "Authorization" in preflight.headers["access-control-allow-headers"]
        assert preflight.headers["access-control-allow-origin"] != "*"
        rebound = server.request("GET", "/v1/sessions", headers={"Host": f"evil.example:{server.port}"})
        assert rebound.status == 421 and rebound.body["error"]
        assert server.request("GET", "/v1/sessions", headers={"Host": f"localhost:{server.port}"}).status == 200


def test_bad_requests_get_clear_errors_and_the_server_keeps_serving(work: Path) -> None:
    user_config(work, "server:\n  maxRequestBytes: 2048\n")
    with scripted_serve(work, [DELTAS]) as server:
        session = server.new_session()
        path = f"/v1/sessions/{session}/messages"
        too_large = server.request("POST", path, {"content": "x" * 4096})
        assert too_large.status == 413 and "2048" in too_large.body["error"]
        unannounced = server.request("POST", path, {"content": "x" * 4096}, chunked=True)
        assert unannounced.status == 413 and "2048" in unannounced.body["error"]
        for raw, status in (
            (b"{not json", 400),
            (b"[1, 2]", 400),
            (b"", 400),
            (b'{"content": NaN}', 400),
            (b"\xff\xfe", 400),
            (b'{"content": 5}', 422),
            (b'{"type": "cancel"}', 422),
            (b'{"content": "x", "options": {"temperature": "hot"}}', 422),
        ):
            answer = server.request("POST", path, raw=raw)
            assert answer.status == status, (raw, answer)
            assert set(answer.body) == {"error"} and answer.body["error"]
        assert server.request("POST", f"/v1/sessions/{session}/approvals", {"id": "x"}).status == 422
        assert server.request("GET", "/v1/sessions/no-such-session").status == 404
        assert server.request("POST", "/v1/sessions/no-such-session/messages", {"content": "x"}).status == 404
        assert server.request("GET", "/v1/sessions?limit=0").status == 400
        assert server.request("POST", "/v1/sessions", {"id": "../escape"}).status == 422
        server.send(session, "still here")
        with server.events(session) as stream:
            assert stream.turn()[-1].event == "turn_end"


def test_sessions_are_created_resumed_listed_and_deleted(work: Path) -> None:
    with scripted_serve(work, [DELTAS]) as server:
        created = server.request("POST", "/v1/sessions", {"id": "chat-1"})
        assert created.status == 201 and created.body["id"] == "chat-1" and created.body["status"] == "active"
        assert server.request("POST", "/v1/sessions", {"id": "chat-1"}).status == 200
        fresh = server.request("POST", "/v1/sessions")
        assert fresh.status == 201 and fresh.body["id"] != "chat-1"
        listed = server.request("GET", "/v1/sessions?limit=1").body["sessions"]
        assert len(listed) == 1
        assert server.request("DELETE", "/v1/sessions/chat-1").status == 200
        assert server.request("GET", "/v1/sessions/chat-1").status == 404
        assert server.request("DELETE", "/v1/sessions/chat-1").status == 404


def test_a_full_queue_answers_429_with_retry_after(work: Path) -> None:
    user_config(work, "server:\n  maxQueuedTurns: 1\n")
    with scripted_serve(work, [SLOW]) as server:
        session = server.new_session()
        server.send(session, "running")
        with server.events(session) as stream:
            stream.until("text_delta")  # the first turn runs
            server.send(session, "waiting")
            full = server.request("POST", f"/v1/sessions/{session}/messages", {"content": "one too many"})
            assert full.status == 429 and full.body["error"]
            assert int(full.headers["retry-after"]) >= 1
            assert server.request("GET", "/healthz", token=None).body["queued"] >= 1


def test_the_token_file_is_owner_only_and_reused_on_restart(work: Path) -> None:
    with scripted_serve(work, [DELTAS]) as first:
        token = first.token
        assert f": {token}" in first.stderr
    path = work.parent / "home" / ".ironhive" / "server-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with scripted_serve(work, [DELTAS]) as second:
        assert second.token == token and token not in second.stderr
        assert second.request("GET", "/v1/sessions", token=token).status == 200


def test_a_projects_server_section_is_ignored_even_when_trusted(work: Path) -> None:
    (work / ".ironhive").mkdir()
    (work / ".ironhive" / "config.yaml").write_text(
        "server:\n  token: project-chosen-token-123\n  allowedOrigins: ['http://project.example']\n"
        "  maxRequestBytes: 1024\n"
    )
    with scripted_serve(work, [DELTAS], env={"IRONHIVE_TRUST_PROJECT": "1"}) as server:
        assert "token in ~/.ironhive/server-token" in server.stderr
        assert server.request("GET", "/v1/sessions", token="project-chosen-token-123").status == 401
        assert server.request("GET", "/v1/sessions", headers={"Origin": "http://project.example"}).status == 403
        session = server.new_session()
        assert server.request("POST", f"/v1/sessions/{session}/messages", {"content": "y" * 3000}).status == 202


def test_remote_binds_need_the_flag_and_a_configured_token(work: Path) -> None:
    home = work.parent / "home"
    refused = run_ironhive("serve", "--host", "0.0.0.0", "--provider", "scripted", cwd=work, home=home)
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr
    no_token = run_ironhive(
        "serve", "--host", "0.0.0.0", "--allow-remote", "--provider", "scripted", cwd=work, home=home
    )
    assert no_token.returncode == 2 and "configured token" in no_token.stderr
    assert not (home / ".ironhive" / "server-token").exists()
    bad_port = run_ironhive("serve", "--port", "70000", cwd=work, home=home)
    assert bad_port.returncode == 2 and bad_port.stderr.startswith("Error: ")
    assert run_ironhive("serve", "--redis", "redis://127.0.0.1:1", "--bogus", cwd=work, home=home).returncode == 2


def test_sigterm_ends_running_turns_with_turn_end_and_exits_0(work: Path) -> None:
    server = scripted_serve(work, [SLOW])
    with server:
        session = server.new_session()
        server.send(session, "long")
        with server.events(session) as stream:
            stream.until("text_delta")
            server.process.send_signal(signal.SIGTERM)
            rest = list(stream.frames())
        assert [frame.event for frame in rest].count("turn_end") == 1 and rest[-1].event == "turn_end"
        assert server.process.wait(timeout=20) == 0
