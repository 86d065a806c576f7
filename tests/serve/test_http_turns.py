"""Turns over HTTP are known by (session, turn id) and admitted before they start: a
repeated id reattaches and never runs twice (also ten at once), two sessions may share an
id, and a refused request (too many streams, a full session queue, too many turns) is
429/503 with ``Retry-After`` and leaves the store unchanged."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import httpx2
import trio

from tests.serve.runtime import served
from tests.serve.sse import connect_sse

JSON = {"accept": "application/json"}


async def record(client: httpx2.AsyncClient, session: str) -> dict[str, Any]:
    r = await client.get(f"/v1/sessions/{session}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def in_flight(client: httpx2.AsyncClient, count: int) -> None:
    """Wait until the server holds ``count`` turns not yet ended."""
    while len((await client.get("/observer/state")).json()["in_flight"]) < count:  # noqa: ASYNC110
        await trio.sleep(0.01)


async def test_a_repeated_turn_id_runs_once_even_posted_ten_times_at_once() -> None:
    """Fails on df941de: each POST ran the turn again, all stored under one id."""
    async with served() as s, s.client() as client:
        results: list[dict[str, Any]] = []

        async def post() -> None:
            body = {"text": "slow", "turn": "t1"}
            r = await client.post("/v1/sessions/a/turns", json=body, headers=JSON)
            assert r.status_code == 200, r.text
            results.append(r.json())

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(post)
        assert {(r["turn"], r["status"], r["text"]) for r in results} == {
            ("t1", "completed", "one two three four five")
        }
        again = await client.post("/v1/sessions/a/turns", json={"text": "other", "turn": "t1"},
                                  headers=JSON)  # fmt: skip
        assert again.json()["text"] == "one two three four five"  # reattached: not run
        stored = await record(client, "a")
        assert stored["record"]["turns"] == 1 and len(stored["messages"]) == 2


async def test_a_repeated_turn_id_reattaches_to_the_stream_from_its_first_event() -> None:
    async with served() as s, s.client() as client:
        body = {"text": "slow", "turn": "t1"}
        async with (
            connect_sse(client, "POST", "/v1/sessions/a/turns", json=body) as first,
            aclosing(first.aiter_sse()) as events,  # type: ignore[type-var]
        ):
            await anext(events)  # the turn runs
            async with connect_sse(client, "POST", "/v1/sessions/a/turns", json=body) as second:
                assert second.response.headers["x-turn-id"] == "t1"
                kinds = [e.event async for e in second.aiter_sse()]
            assert [e.event async for e in events][-1] == "turn_completed"
        assert kinds[0] == "turn_started" and kinds[-1] == "turn_completed"
        assert (await record(client, "a"))["record"]["turns"] == 1


async def test_two_sessions_may_use_one_turn_id() -> None:
    """Fails on df941de: once session b used t1, reattaching to a's t1 answered 404."""
    async with served() as s, s.client() as client:
        a = await client.post("/v1/sessions/a/turns", json={"text": "slow", "turn": "t1"},
                              headers=JSON)  # fmt: skip
        b = await client.post("/v1/sessions/b/turns", json={"text": "hi", "turn": "t1"},
                              headers=JSON)  # fmt: skip
        assert a.json()["text"] == "one two three four five" and b.json()["text"] == "hello"
        again = await client.get("/v1/sessions/a/turns/t1", headers=JSON)
        assert again.status_code == 200 and again.json()["text"] == "one two three four five"
        assert (await record(client, "b"))["record"]["turns"] == 1


async def test_a_stored_turn_id_the_server_has_forgotten_is_409_and_runs_nothing() -> None:
    async with served(keep_turns=1) as s, s.client() as client:
        for turn in ("t1", "t2", "t3"):
            r = await client.post("/v1/sessions/a/turns", json={"text": "hi", "turn": turn},
                                  headers=JSON)  # fmt: skip
            assert r.status_code == 200
        r = await client.post("/v1/sessions/a/turns", json={"text": "hi", "turn": "t1"},
                              headers=JSON)  # fmt: skip
        assert r.status_code == 409 and r.json()["error_kind"] == "turn_exists"
        assert (await record(client, "a"))["record"]["turns"] == 3


def assert_retry_later(r: httpx2.Response, status: int, kind: str) -> None:
    assert r.status_code == status and r.json()["error_kind"] == kind, r.text
    assert int(r.headers["retry-after"]) >= 1


async def test_a_refused_stream_runs_no_turn_and_leaves_the_store_unchanged() -> None:
    """Fails on df941de: 503 too_many_streams came after the turn had started; the
    "refused" turn was committed."""
    async with served(max_streams=1) as s, s.client() as client:
        async with connect_sse(
            client, "POST", "/v1/sessions/a/turns", json={"text": "slow"}
        ) as src:
            r = await client.post("/v1/sessions/b/turns", json={"text": "hi"})
            assert_retry_later(r, 503, "too_many_streams")
            assert [e.event async for e in src.aiter_sse()][-1] == "turn_completed"
        assert (await client.get("/v1/sessions/b")).status_code == 404


async def test_a_full_session_queue_is_429_before_the_turn_starts() -> None:
    """Fails on df941de: a full session queue was answered 200 with "status": "failed"."""
    async with served(drain_timeout=0) as s, s.client() as client:
        admitted = 1 + s.host.config.max_queued
        async with trio.open_nursery() as nursery:
            for _ in range(admitted):
                nursery.start_soon(hold, client, "q")
            await in_flight(client, admitted)
            r = await client.post("/v1/sessions/q/turns", json={"text": "hi"}, headers=JSON)
            assert_retry_later(r, 429, "session_busy")
            r = await client.post("/v1/sessions/other/turns", json={"text": "hi"}, headers=JSON)
            assert r.json()["status"] == "completed"  # another session is not held up
            for _ in range(admitted):
                await client.post("/v1/sessions/q/cancel", json={})
                await trio.sleep(0.05)
        assert (await record(client, "q"))["record"]["turns"] == admitted


async def hold(client: httpx2.AsyncClient, session: str) -> None:
    r = await client.post(f"/v1/sessions/{session}/turns", json={"text": "hold"}, headers=JSON)
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text


async def test_more_turns_than_admitted_are_503_and_leave_the_store_unchanged() -> None:
    """Fails on df941de: nothing bounded the turns admitted (JSON requests had no limit)."""
    async with served(max_admitted=3) as s, s.client() as client:
        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(hold, client, f"h{i}")
            await in_flight(client, 3)
            refused = await client.post("/v1/sessions/x/turns", json={"text": "hi"}, headers=JSON)
            assert_retry_later(refused, 503, "overloaded")
            streamed = await client.post("/v1/sessions/x/turns", json={"text": "hi"})
            assert_retry_later(streamed, 503, "overloaded")
            for i in range(3):
                await client.post(f"/v1/sessions/h{i}/cancel", json={})
        assert (await client.get("/v1/sessions/x")).status_code == 404
        r = await client.post("/v1/sessions/x/turns", json={"text": "hi"}, headers=JSON)
        assert r.json()["status"] == "completed"  # admitted again once there is room


async def test_a_slot_freed_by_a_refusal_race_is_never_over_admitted() -> None:
    """50 clients at once against 5 admitted turns: every answer is a completed turn or a
    503 with Retry-After, never more than 5 running, and the store holds exactly the
    completed ones."""
    async with served(max_admitted=5) as s, s.client(timeout=60) as client:
        outcomes: list[str] = []
        peak = 0

        async def watch() -> None:
            nonlocal peak
            while True:
                peak = max(peak, s.host.snapshot().turns_in_flight)
                await trio.sleep(0.001)

        async def one(i: int) -> None:
            r = await client.post(f"/v1/sessions/c{i}/turns", json={"text": "slow"}, headers=JSON)
            if r.status_code == 503:
                assert int(r.headers["retry-after"]) >= 1
                outcomes.append("refused")
            else:
                assert r.json()["status"] == "completed", r.text
                outcomes.append("completed")

        async with trio.open_nursery() as watching:
            watching.start_soon(watch)
            async with trio.open_nursery() as nursery:
                for i in range(50):
                    nursery.start_soon(one, i)
            watching.cancel_scope.cancel()
        completed = outcomes.count("completed")
        assert completed >= 5 and completed + outcomes.count("refused") == 50
        listed = (await client.get("/v1/sessions", params={"limit": "100"})).json()["sessions"]
        assert len(listed) == completed and 1 <= peak <= 5


async def test_keep_turns_bounds_memory_behind_a_turn_that_never_ends() -> None:
    """Fails on df941de: one hung turn kept every later turn and its events."""
    async with (
        served(keep_turns=5, drain_timeout=0) as s,
        s.client() as client,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(hold, client, "hung")
        await in_flight(client, 1)
        for i in range(30):
            await client.post(f"/v1/sessions/s{i}/turns", json={"text": "hi"}, headers=JSON)
        state = (await client.get("/observer/state")).json()
        assert len(state["in_flight"]) == 1
        assert len(state["recent"]) == 5  # the newest finished turns, no more
        assert [t["session"] for t in state["recent"]] == [f"s{i}" for i in range(29, 24, -1)]
        await client.post("/v1/sessions/hung/cancel", json={})
