"""The HTTP API over TCP with a real client: every route, the token, body and stream
limits, a disconnect mid-stream then reattach, and /metrics through prometheus' parser."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from agcore_actors import Actor
from agcore_actors.serve import HttpConfig
from tests.serve.runtime import Served, served
from tests.serve.sse import connect_sse

JSON = {"accept": "application/json"}


async def sse(client: httpx2.AsyncClient, url: str, body: Any) -> list[dict[str, Any]]:
    async with connect_sse(client, "POST", url, json=body) as source:
        return [json.loads(event.data) async for event in source.aiter_sse()]


async def start_and_leave(s: Served, session: str, text: str) -> str:
    """POST a turn over a bare socket, read until its first event, hang up; its id."""
    parts = urlsplit(s.url)
    assert parts.hostname is not None and parts.port is not None
    body = json.dumps({"text": text}).encode()
    stream = await trio.open_tcp_stream(parts.hostname, parts.port)
    async with stream:
        await stream.send_all(
            f"POST /v1/sessions/{session}/turns HTTP/1.1\r\nhost: {parts.netloc}\r\n"
            f"authorization: {s.headers['authorization']}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        received = b""
        while b"turn_started" not in received:
            chunk = await stream.receive_some()
            assert chunk
            received += chunk
    head = received.split(b"\r\n\r\n")[0].decode().lower()
    return next(line.split(":", 1)[1].strip() for line in head.split("\r\n")
                if line.startswith("x-turn-id:"))  # fmt: skip


async def test_healthz_needs_no_token_but_every_other_route_does() -> None:
    async with served(token="s3cret") as s, httpx2.AsyncClient(base_url=s.url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        routes = [("GET", "/v1/sessions"), ("GET", "/metrics"), ("POST", "/v1/sessions/a/turns"),
                  ("DELETE", "/v1/sessions/a"), ("GET", "/v1/sessions/a"),
                  ("POST", "/v1/sessions/a/cancel")]  # fmt: skip
        for method, path in routes:
            assert (await client.request(method, path)).status_code == 401, path
            wrong = {"authorization": "Bearer nope"}
            assert (await client.request(method, path, headers=wrong)).status_code == 401
        good = {"authorization": "Bearer s3cret"}
        assert (await client.get("/v1/sessions", headers=good)).status_code == 200


def test_a_token_is_always_there_and_long_for_a_public_bind() -> None:
    with pytest.raises(ValueError, match="needs a bearer token"):
        HttpConfig(host="0.0.0.0", token=None)
    with pytest.raises(ValueError, match="needs a bearer token"):
        HttpConfig(token=None)  # loopback is no boundary against a browser
    with pytest.raises(ValueError, match="at least 16 characters"):
        HttpConfig(host="0.0.0.0", token="t")
    assert HttpConfig(host="::1", token="t").token == "t"
    fresh, other = HttpConfig(), HttpConfig()
    assert fresh.token and other.token and fresh.token != other.token
    assert len(fresh.token) >= 32 and fresh.token not in repr(fresh)


async def test_a_turn_streams_its_events_ending_with_one_final_event() -> None:
    async with served() as s, s.client() as client:
        async with connect_sse(client, "POST", "/v1/sessions/a/turns", json={"text": "hi"}) as src:
            turn = src.response.headers["x-turn-id"]
            events = [json.loads(e.data) for e in [e async for e in src.aiter_sse()]]
        kinds = [e["event"] for e in events]
        assert kinds[0] == "turn_started" and kinds[-1] == "turn_completed"
        assert sum(k.startswith("turn_") and k != "turn_started" for k in kinds) == 1
        assert all(e["turn"] == turn and e["session"] == "a" for e in events)
        assert events[-1]["result"]["text"] == "hello"


async def test_a_turn_with_accept_json_answers_its_result() -> None:
    async with served() as s, s.client() as client:
        r = await client.post(
            "/v1/sessions/a/turns", json={"text": "hi", "turn": "t1"}, headers=JSON
        )
        assert r.status_code == 200
        assert r.json()["status"] == "completed" and r.json()["turn"] == "t1"
        session = (await client.get("/v1/sessions/a")).json()
        assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
        assert session["record"]["turns"] == 1 and session["usage"] is not None


async def test_a_body_over_the_limit_gets_413_and_changes_nothing() -> None:
    async def chunks() -> Any:  # no content-length: the limit is counted as it comes
        for _ in range(10):
            yield b'{"text": "xxxxxxxxxxxxxxx'

    async with served(max_body=64) as s:
        async with s.client() as client:
            r = await client.post("/v1/sessions/a/turns", json={"text": "x" * 100})
            assert r.status_code == 413 and r.json()["error_kind"] == "body_too_large"
        async with s.client() as client:
            ctype = {"content-type": "application/json"}
            r = await client.post("/v1/sessions/a/turns", content=chunks(), headers=ctype)
            assert r.status_code == 413
        async with s.client() as client:
            assert (await client.get("/v1/sessions/a")).status_code == 404


async def test_a_malformed_body_gets_400_naming_the_problem() -> None:
    async with served() as s, s.client() as client:
        ctype = {"content-type": "application/json"}
        r = await client.post("/v1/sessions/a/turns", content=b"{nope", headers=ctype)
        assert r.status_code == 400 and "not JSON" in r.json()["error"]
        r = await client.post("/v1/sessions/a/turns", json={"text": "hi", "colour": 1})
        assert r.status_code == 400 and "colour" in r.json()["error"]
        r = await client.post("/v1/sessions/a/cancel", json={"mode": "soon"})
        assert r.status_code == 400
        r = await client.post("/v1/sessions/a/approvals/c1", json={"allow": "yes"})
        assert r.status_code == 400
        assert (await client.get("/v1/nothing")).status_code == 404
        assert (await client.get("/v1/sessions/a")).status_code == 404


async def test_a_client_leaving_mid_stream_cancels_nothing_and_can_reattach() -> None:
    async with served() as s, s.client() as client:
        turn = await start_and_leave(s, "a", "slow")
        async with connect_sse(client, "GET", f"/v1/sessions/a/turns/{turn}") as source:
            events = [json.loads(e.data) async for e in source.aiter_sse()]
        assert events[0]["event"] == "turn_started"
        assert events[-1]["event"] == "turn_completed"
        assert events[-1]["result"]["text"] == "one two three four five"
        r = await client.get(f"/v1/sessions/a/turns/{turn}", headers=JSON)
        assert r.json()["status"] == "completed"
        messages = (await client.get("/v1/sessions/a")).json()["messages"]
        assert messages[-1]["content"] == "one two three four five"
        assert (await client.get("/v1/sessions/a/turns/nope")).status_code == 404


async def test_cancel_cancels_the_running_turn_which_ends_cancelled() -> None:
    async with served() as s, s.client() as client:
        events: list[dict[str, Any]] = []
        async with connect_sse(
            client, "POST", "/v1/sessions/a/turns", json={"text": "slow"}
        ) as source:
            async for event in source.aiter_sse():
                events.append(json.loads(event.data))
                if len(events) == 1:
                    r = await client.post("/v1/sessions/a/cancel", json={})
                    assert r.json() == {"cancelled": True}
        assert events[-1]["event"] == "turn_cancelled"
        r = await client.post("/v1/sessions/a/cancel")
        assert r.json() == {"cancelled": False}


async def test_an_approval_answers_the_waiting_tool_call() -> None:
    async with served() as s, s.client() as client:
        events: list[dict[str, Any]] = []
        async with connect_sse(
            client, "POST", "/v1/sessions/a/turns", json={"text": "delete /x"}
        ) as source:
            async for event in source.aiter_sse():
                events.append(json.loads(event.data))
                if events[-1]["event"] == "approval_requested":
                    r = await client.post(
                        f"/v1/sessions/a/approvals/{events[-1]['call_id']}", json={"allow": True}
                    )
                    assert r.json() == {"answered": True}
        finished = [e for e in events if e["event"] == "tool_call_finished"]
        assert finished[0]["status"] == "ok" and events[-1]["event"] == "turn_completed"
        r = await client.post("/v1/sessions/a/approvals/d1", json={"allow": False})
        assert r.json() == {"answered": False}


async def test_sessions_are_listed_in_pages_and_deleted() -> None:
    async with served() as s, s.client() as client:
        for i in range(5):
            await client.post(f"/v1/sessions/s{i}/turns", json={"text": "hi"}, headers=JSON)
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
            page = (await client.get("/v1/sessions", params=params)).json()
            seen += [record["id"] for record in page["sessions"]]
            pages += 1
            cursor = page["cursor"]
            if cursor is None:
                break
        assert sorted(seen) == [f"s{i}" for i in range(5)] and pages >= 3
        assert (await client.get("/v1/sessions", params={"limit": "0"})).status_code == 400
        assert (await client.delete("/v1/sessions/s1")).status_code == 204
        assert (await client.get("/v1/sessions/s1")).status_code == 404
        assert (await client.delete("/v1/sessions/s1")).status_code == 404


async def test_open_streams_are_bounded() -> None:
    async with (
        served(max_streams=1) as s,
        s.client() as client,
        connect_sse(client, "POST", "/v1/sessions/a/turns", json={"text": "slow"}),
    ):
        r = await client.post("/v1/sessions/b/turns", json={"text": "hi"})
        assert r.status_code == 503 and r.json()["error_kind"] == "too_many_streams"


async def test_metrics_parse_and_match_the_snapshots() -> None:
    async with served() as s, s.client() as client:
        for i in range(3):
            await client.post(f"/v1/sessions/s{i}/turns", json={"text": "hi"}, headers=JSON)
        r = await client.get("/metrics")
        assert r.headers["content-type"].startswith("text/plain")
        families = {f.name: f for f in text_string_to_metric_families(r.text)}
        turns = {s.labels["outcome"]: s.value for s in families["agcore_turns"].samples
                 if s.name == "agcore_turns_total"}  # fmt: skip
        assert turns == {"completed": 3.0}
        assert families["agcore_sessions_live"].samples[0].value == s.host.snapshot().live == 3
        actors = families["agcore_actors"].samples[0].value
        assert actors == len(s.host.system.snapshot())
        assert {"agcore_actor_mailbox_depth", "agcore_turn_seconds"} <= set(families)


async def test_shutdown_lets_turns_in_flight_finish() -> None:
    async with served() as s, s.client() as client:
        async with connect_sse(
            client, "POST", "/v1/sessions/a/turns", json={"text": "slow"}
        ) as source:
            events = []
            async for event in source.aiter_sse():
                events.append(json.loads(event.data))
                if len(events) == 1:
                    s.stop.set()
        assert events[-1]["event"] == "turn_completed"
        assert [e["event"] for e in events].count("text_delta") == 5


class _Sick(Actor[str]):
    """Publishes a degraded state as soon as it starts."""

    async def on_start(self) -> None:
        self.ctx.set_degraded("storage unavailable: disk full")

    async def handle(self, msg: str) -> None:
        return None


async def test_a_degraded_actor_shows_in_the_observer_and_the_metrics() -> None:
    async with served() as s, s.client() as client:
        await s.host.system.spawn(_Sick, name="sick")
        state = (await client.get("/observer/state")).json()
        rows = {row["name"]: row for row in state["tree"]}
        assert rows["sick"]["degraded"] == "storage unavailable: disk full"
        assert all(row["degraded"] is None for name, row in rows.items() if name != "sick")
        families = {f.name: f for f in text_string_to_metric_families(
            (await client.get("/metrics")).text
        )}  # fmt: skip
        flags = {x.labels["name"]: x.value for x in families["agcore_actor_degraded"].samples}
        assert flags["sick"] == 1 and sum(flags.values()) == 1
