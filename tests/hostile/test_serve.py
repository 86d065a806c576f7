"""Hostile ``serve`` input: stdio lines and HTTP requests. Each gets a typed answer (an
``error`` line with an ``error_kind``, a 4xx JSON body naming it, or a turn that ends
with exactly one final event) — never a crash, a 500, a hang or a lost turn — and the
host still serves a valid request afterwards.

The stdio corpus goes to a real ``serve --stdio`` process; HTTP requests (hypothesis and
the corpus) go over TCP to :func:`serve_http` on hypercorn, run in a thread of its own so
that one server takes every example.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors.serve import BadCommand
from agcore_actors.serve._wire import ApproveCommand, CancelCommand, TurnCommand, parse_line
from tests.hostile.hostile import corpus, json_values, mangled, shaped, to_bytes
from tests.serve.helpers import commands, fake_openai, lines, start_serve
from tests.serve.runtime import served

FINAL = {"turn_completed", "turn_cancelled", "turn_failed"}
_keys = st.sampled_from(["session", "text", "turn", "cancel", "approve", "allow", "reason"])
_junk = json_values(_keys)
_command = shaped(
    {
        "session": st.text(max_size=5),
        "text": st.text(max_size=5),
        "turn": st.text(max_size=5),
        "cancel": st.sampled_from(["immediate", "after_turn", "never"]),
        "approve": st.text(max_size=3),
        "allow": st.booleans(),
        "reason": st.text(max_size=3),
        "mode": st.sampled_from(["immediate", "after_turn"]),
    },
    _junk,
)
_bodies = mangled(_command.map(to_bytes)) | st.binary(max_size=40)


@settings(max_examples=300, deadline=None)
@given(_bodies)
def test_any_line_is_a_command_or_a_bad_command(line: bytes) -> None:
    try:
        command = parse_line(line)
    except BadCommand:
        return
    assert isinstance(command, TurnCommand | CancelCommand | ApproveCommand)
    assert command.session  # every command names its session


def read(path: Path) -> bytes:
    return path.read_bytes()


def test_stdio_corpus_lines_each_get_an_answer_and_every_valid_turn_completes() -> None:
    cases = corpus("serve_line")
    script = b""
    for index, path in enumerate(cases):
        script += read(path).replace(b"\n", b" ") + b"\n"
        script += commands({"session": "live", "text": f"after {path.name}", "turn": f"a{index}"})
    with fake_openai() as base:
        process = start_serve(base, "--stdio")
        out, err = process.communicate(script, timeout=120)
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()
    parsed = lines(out)
    finals = {line["turn"]: line for line in parsed if line["event"] in FINAL}
    for index, path in enumerate(cases):
        final = finals.get(f"a{index}")
        assert final is not None and final["event"] == "turn_completed", (path.name, final)
    # Every hostile line got its own answer: an error line, or a turn with one final line.
    errors = [line for line in parsed if line["event"] == "error"]
    hostile_turns = {t for t in finals if not t.startswith("a")} | {
        line["turn"] for line in parsed if line.get("session") != "live" and "turn" in line
    }
    assert len(errors) + len(hostile_turns) >= len(cases) - 2, (errors, hostile_turns)
    assert all(e["error_kind"] == "bad_command" for e in errors)
    for turn in hostile_turns:
        ends = [line for line in parsed if line.get("turn") == turn and line["event"] in FINAL]
        assert len(ends) == 1, (turn, ends)


# -- HTTP ----------------------------------------------------------------------------------

TOKEN = "hostile-token-5f0c3a9e"
AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """One HTTP server (in-process runtime, real TCP) for the whole module."""
    urls: queue.Queue[str] = queue.Queue()
    stop = threading.Event()

    async def main() -> None:
        async with served(token=TOKEN) as s:
            urls.put(s.url)
            while not stop.is_set():  # noqa: ASYNC110 - another thread says when
                await trio.sleep(0.05)

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    try:
        yield urls.get(timeout=30)
    finally:
        stop.set()
        thread.join(timeout=30)


ROUTES = [
    ("POST", "/v1/sessions/{s}/turns"),
    ("POST", "/v1/sessions/{s}/cancel"),
    ("POST", "/v1/sessions/{s}/approvals/{s}"),
    ("GET", "/v1/sessions/{s}"),
    ("GET", "/v1/sessions/{s}/turns/{s}"),
    ("DELETE", "/v1/sessions/{s}"),
    ("GET", "/v1/sessions?limit={s}&cursor={s}"),
    ("GET", "/observer/state"),
]
SPECIAL_IDS = ["x'; DROP TABLE sessions;--", "%", "_", "..", "\x00", "a" * 3000, "²", "9" * 5000,
               "\r\nx-evil: 1", "é中😀", "-1", " 1"]  # fmt: skip
_ids = st.text(min_size=1, max_size=12) | st.sampled_from(SPECIAL_IDS)


def check_answer(response: httpx2.Response, url: str) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400 and response.content:
        body = response.json()
        assert body["error_kind"] and body["error"], body
    # The host still answers.
    assert httpx2.get(f"{url}/healthz", timeout=10).status_code == 200


def request(url: str, method: str, route: str, session: str, body: bytes) -> httpx2.Response:
    path = route.format(s=quote(session, safe=""))
    headers = {"accept": "application/json", "content-type": "application/json", **AUTH}
    return httpx2.request(method, url + path, content=body, headers=headers, timeout=30)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(route=st.sampled_from(ROUTES), session=_ids, body=_bodies)
def test_any_http_request_gets_a_typed_answer(
    http_url: str, route: tuple[str, str], session: str, body: bytes
) -> None:
    method, path = route
    check_answer(request(http_url, method, path, session, body), http_url)


@pytest.mark.parametrize("path", corpus("http_body"), ids=lambda p: p.name)
def test_corpus_http_body_gets_a_typed_answer_and_a_valid_turn_runs_after(
    http_url: str, path: Path
) -> None:
    body = read(path)
    for method, route in ROUTES[:3]:
        response = request(http_url, method, route, "hostile", body)
        check_answer(response, http_url)
        if route.endswith("/turns") and response.status_code == 200:
            result: dict[str, Any] = response.json()
            assert result["status"] in ("completed", "failed", "cancelled"), result
    after = request(http_url, "POST", ROUTES[0][1], "live", json.dumps({"text": "hi"}).encode())
    assert after.status_code == 200 and after.json()["status"] == "completed", after.text


@pytest.mark.parametrize("session", SPECIAL_IDS, ids=range(len(SPECIAL_IDS)))
@pytest.mark.parametrize("route", ROUTES, ids=[f"{m} {r}" for m, r in ROUTES])
def test_hostile_ids_and_parameters_get_a_typed_answer(
    http_url: str, route: tuple[str, str], session: str
) -> None:
    method, path = route
    body = json.dumps({"text": "hi", "turn": session, "allow": True}).encode()
    check_answer(request(http_url, method, path, session, body), http_url)


@pytest.mark.parametrize("turn", ["a\r\nx-evil: 1", "a\x00b", "\x7f"])
def test_a_turn_id_that_cannot_be_a_header_is_refused_before_the_turn_starts(
    http_url: str, turn: str
) -> None:
    body = json.dumps({"text": "hi", "turn": turn}).encode()
    headers = {"content-type": "application/json", **AUTH}
    response = httpx2.post(f"{http_url}/v1/sessions/ids/turns", content=body, timeout=30,
                           headers=headers)  # fmt: skip
    assert response.status_code == 400 and response.json()["error_kind"] == "bad_command"
    listed = httpx2.get(f"{http_url}/v1/sessions/ids", timeout=30, headers=AUTH)
    assert listed.status_code == 404  # no turn ran, so nothing was stored
