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

from tests.serve.helpers import fake_openai, serve_env, silent_model, start_serve, stored


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
                headers={"accept": "application/json"},
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
            with httpx2.stream("POST", f"{url}/v1/sessions/a/turns", json={"text": "hi"}) as r:
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
                headers={"accept": "application/json"},
            )
            assert r.json()["status"] == "completed"
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    records = [json.loads(line) for line in err.decode().splitlines()]
    assert [r["message"] for r in records] == ["turn completed"]


def test_a_public_bind_without_a_token_is_a_usage_error() -> None:
    process = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "serve", "--http", "0.0.0.0:0"],
        capture_output=True,
        env=serve_env("http://127.0.0.1:9/v1"),
        timeout=60,
    )
    assert process.returncode == 2
    assert b"needs a bearer token" in process.stderr and b"AGCORE_SERVE_TOKEN" in process.stderr
