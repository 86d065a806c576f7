"""``agcore-actors serve --http`` as a child process: SIGTERM drains turns in flight
within the deadline (then cancels and commits them) and exits 0; with ``--log-format
json`` every stderr line is JSON, the first included; a non-loopback bind without a token
is a usage error."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx2

from tests.serve.helpers import AUTH, fake_openai, serve_env, silent_model, start_serve, stored


def url_of(process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    assert line.startswith("serving on "), line
    return line.split()[-1]


def test_http_sigterm_lets_a_fast_turn_finish_and_exits_0(tmp_path: Path) -> None:
    with fake_openai() as base:
        process = start_serve(base, "--http", "127.0.0.1:0", "--store", str(tmp_path / "s.db"))
        try:
            url = url_of(process)
            r = httpx2.post(
                f"{url}/v1/sessions/a/turns",
                json={"text": "hi"},
                headers={"accept": "application/json", **AUTH},
            )
            assert r.json()["status"] == "completed"
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    assert stored(tmp_path / "s.db", ["a"])["a"].record.turns == 1


def test_http_sigterm_cancels_a_turn_still_running_after_the_deadline(tmp_path: Path) -> None:
    with silent_model() as base:
        process = start_serve(
            base, "--http", "127.0.0.1:0", "--store", str(tmp_path / "s.db"),
            "--drain-timeout", "0.5",
        )  # fmt: skip
        events = []
        try:
            url = url_of(process)
            turns = f"{url}/v1/sessions/a/turns"
            with httpx2.stream("POST", turns, json={"text": "hi"}, headers=AUTH) as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        events.append(json.loads(line[6:]))
                        if len(events) == 1:
                            process.send_signal(signal.SIGTERM)
        finally:
            _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    assert [e["event"] for e in events] == ["turn_started", "turn_cancelled"]
    record = stored(tmp_path / "s.db", ["a"])["a"].record
    assert record.turns == 1 and record.status == "idle"


def test_json_logs_are_json_from_the_first_line(tmp_path: Path) -> None:
    with fake_openai() as base:
        process = start_serve(
            base, "--http", "127.0.0.1:0", "--store", str(tmp_path / "s.db"),
            "--log-format", "json", "--log-level", "info",
        )  # fmt: skip
        try:
            assert process.stderr is not None
            first = json.loads(process.stderr.readline())
            assert first["message"] == f"serving on {first['url']}" and first["level"] == "info"
            r = httpx2.post(
                f"{first['url']}/v1/sessions/a/turns",
                json={"text": "hi"},
                headers={"accept": "application/json", **AUTH},
            )
            assert r.json()["status"] == "completed"
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    records = [json.loads(line) for line in err.decode().splitlines()]
    assert [r["message"] for r in records] == ["turn completed"]


def test_a_public_bind_without_a_token_is_a_usage_error() -> None:
    env = serve_env("http://127.0.0.1:9/v1")
    del env["AGCORE_SERVE_TOKEN"]
    process = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "serve", "--http", "0.0.0.0:0"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert process.returncode == 2
    assert b"needs a bearer token" in process.stderr and b"AGCORE_SERVE_TOKEN" in process.stderr


def _first_turn(url: str, headers: dict[str, str]) -> int:
    r = httpx2.post(f"{url}/v1/sessions/a/turns", json={"text": "hi"},
                    headers={"accept": "application/json", **headers})  # fmt: skip
    return r.status_code


def test_without_a_token_a_loopback_server_makes_one_and_shows_it_once(tmp_path: Path) -> None:
    """Fails on df941de: a loopback server without AGCORE_SERVE_TOKEN took any request."""
    env = serve_env("http://127.0.0.1:9/v1")
    del env["AGCORE_SERVE_TOKEN"]
    with fake_openai() as base:
        env["OPENAI_BASE_URL"] = base
        process = subprocess.Popen(
            [sys.executable, "-m", "agcore_actors.cli", "serve", "--http", "127.0.0.1:0",
             "--store", str(tmp_path / "s.db")],
            stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        try:
            url = url_of(process)
            assert process.stderr is not None
            shown = process.stderr.readline().decode()
            token = shown.rsplit(": ", 1)[1].strip()
            observer = process.stderr.readline().decode()
            assert observer.strip() == f"observer: {url}/observer#access_token={token}"
            assert len(token) >= 32
            assert _first_turn(url, {}) == 401
            assert _first_turn(url, {"authorization": f"Bearer {token}"}) == 200
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
    assert token.encode() not in err  # shown once


def test_a_token_file_gives_the_token(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-a-file-0123456789\n")
    env = serve_env("http://127.0.0.1:9/v1")
    with fake_openai() as base:
        env["OPENAI_BASE_URL"] = base
        process = subprocess.Popen(
            [sys.executable, "-m", "agcore_actors.cli", "serve", "--http", "127.0.0.1:0",
             "--token-file", str(tmp_path / "token"), "--store", str(tmp_path / "s.db")],
            stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        try:
            url = url_of(process)
            assert _first_turn(url, AUTH) == 401  # the file wins over the environment
            assert _first_turn(url, {"authorization": "Bearer from-a-file-0123456789"}) == 200
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
    assert b"from-a-file" not in err


def test_a_tenants_file_gives_named_tokens_each_with_its_own_sessions(tmp_path: Path) -> None:
    (tmp_path / "tenants.toml").write_text(
        '[[tenants]]\nname = "acme"\ntoken = "acme-token-0123456789"\n'
        '[[tenants]]\nname = "ops"\ntoken = "ops-token-0123456789ab"\nscopes = ["admin"]\n'
    )
    with fake_openai() as base:
        process = start_serve(base, "--http", "127.0.0.1:0", "--store", str(tmp_path / "s.db"),
                              "--tenants", str(tmp_path / "tenants.toml"))  # fmt: skip
        try:
            url = url_of(process)
            acme = {"authorization": "Bearer acme-token-0123456789"}
            assert _first_turn(url, acme) == 200
            assert _first_turn(url, {"authorization": "Bearer ops-token-0123456789ab"}) == 403
            own = httpx2.get(f"{url}/v1/sessions", headers=AUTH).json()["sessions"]
            assert own == []  # the server's token does not see acme's "a"
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    assert stored(tmp_path / "s.db", ["acme/a"])["acme/a"].record.turns == 1


def test_a_bad_tenants_file_or_tenant_name_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[[tenants]]\nname = "a/b"\ntoken = "t"\n')
    env = serve_env("http://127.0.0.1:9/v1")
    for args in (["--http", "127.0.0.1:0", "--tenants", str(tmp_path / "bad.toml")],
                 ["--http", "127.0.0.1:0", "--tenants", str(tmp_path / "missing.toml")],
                 ["--stdio", "--tenant", "a b"]):  # fmt: skip
        process = subprocess.run(
            [sys.executable, "-m", "agcore_actors.cli", "serve", *args],
            capture_output=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert process.returncode == 2, (args, process.stderr)
        assert len(process.stderr.decode().strip().splitlines()) == 1
