"""The observer: its state document matches the system's and the host's snapshots while
50 sessions run, stays bounded at 2,000 sessions (slowest first, searchable by session,
per-turn timings); the page is plain HTML served from the package, token-checked."""

from __future__ import annotations

import json

import httpx2
import trio
import trio.testing

from agcore_actors.agent import SessionHost
from tests.serve.runtime import served

JSON = {"accept": "application/json"}


async def slow_turn(client: httpx2.AsyncClient, session: str) -> None:
    r = await client.post(f"/v1/sessions/{session}/turns", json={"text": "slow"}, headers=JSON)
    assert r.json()["status"] == "completed"


async def busy(host: SessionHost, count: int) -> None:
    """Return once ``count`` sessions are busy (checked at every scheduling round)."""
    while host.snapshot().busy < count:
        await trio.testing.wait_all_tasks_blocked()
        await trio.lowlevel.checkpoint()


async def test_observer_state_matches_the_snapshots_while_50_sessions_run() -> None:
    async with served() as s, s.client(timeout=30) as client:
        async with trio.open_nursery() as nursery:
            for i in range(50):
                nursery.start_soon(slow_turn, client, f"s{i}")
            with trio.fail_after(10):
                await busy(s.host, 50)
            state = (await client.get("/observer/state")).json()
            tree = s.host.system.snapshot()
            host = s.host.snapshot()
        assert [(r["name"], r["kind"], r["parent"]) for r in state["tree"]] == [
            (r.name, r.kind, r.parent) for r in tree
        ]
        assert sum(r["name"].startswith("session:") for r in state["tree"]) == 50
        assert state["sessions"]["live"] == host.live == 50
        assert state["sessions"]["busy"] == host.busy == 50
        assert len(state["in_flight"]) == state["in_flight_total"] == 50
        seconds = [t["seconds"] for t in state["in_flight"]]
        assert seconds == sorted(seconds, reverse=True)
        assert {t["step"] for t in state["in_flight"]} <= {"waiting", "turn_started", "text_delta"}
        assert state["summary"]["actors"] == len(tree) == state["tree_total"]
        after = (await client.get("/observer/state")).json()
        assert len(after["recent"]) == 50 and after["in_flight"] == []
        for turn in after["recent"]:
            assert turn["status"] == "completed" and turn["model_calls"] == 1
            assert 0 < turn["first_output"] <= turn["seconds"]


async def test_the_page_is_static_and_its_data_needs_the_token_in_a_header() -> None:
    """Fails on df941de: the token travelled in the URL (``?access_token=``)."""
    async with served(token="s3cret") as s, httpx2.AsyncClient(base_url=s.url) as client:
        page = await client.get("/observer")  # no data in it: the page asks for it
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "observer/state" in page.text and "://" not in page.text  # nothing from elsewhere
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
        assert "frame-ancestors 'none'" in csp and page.headers["x-frame-options"] == "DENY"
        assert "location.hash" in page.text and "access_token=" not in page.text.split(
            "location.hash", 1)[1].split("\n")[0]  # fmt: skip
        state = await client.get("/observer/state", params={"access_token": "s3cret"})
        assert state.status_code == 401  # a token in the query string is refused
        state = await client.get("/observer/state", headers={"authorization": "Bearer s3cret"})
        assert state.status_code == 200 and "tree" in state.json()


async def hi(client: httpx2.AsyncClient, session: str, limiter: trio.CapacityLimiter) -> None:
    async with limiter:
        r = await client.post(f"/v1/sessions/{session}/turns", json={"text": "hi"}, headers=JSON)
        assert r.json()["status"] == "completed"


async def hold(client: httpx2.AsyncClient, session: str) -> None:
    r = await client.post(f"/v1/sessions/{session}/turns", json={"text": "hold"}, headers=JSON)
    assert r.json()["status"] == "cancelled"


async def test_the_state_stays_bounded_at_2000_sessions_and_finds_one_by_search() -> None:
    async with served() as s, s.client(timeout=120) as client:
        limiter = trio.CapacityLimiter(64)
        async with trio.open_nursery() as nursery:
            for i in range(2000):
                nursery.start_soon(hi, client, f"user-{i:04d}", limiter)
        await hi(client, "user-1234", limiter)  # the runner keeps the last 256 turns only
        async with trio.open_nursery() as nursery:
            for i in range(80):
                nursery.start_soon(hold, client, f"held-{i:03d}")
            with trio.fail_after(30):
                await busy(s.host, 80)
            r = await client.get("/observer/state")
            state = r.json()
            every = (await client.get("/observer/state?limit=500")).json()
            found = (await client.get("/observer/state?session=user-1234&limit=5")).json()
            fifty = (await client.get("/observer/state?session=held-05")).json()
            refused = await client.get("/observer/state?limit=0")
            for i in range(80):
                await client.post(f"/v1/sessions/held-{i:03d}/cancel")
    assert state["sessions"]["live"] == 2080 and state["summary"]["actors"] > 2080
    assert len(r.content) < 64_000  # 50 rows a list, whatever the number of sessions
    assert state["tree_total"] > 2080 and len(state["tree"]) < 70
    assert state["in_flight_total"] == 80 and len(state["in_flight"]) == 50
    turns = [t["turn"] for t in every["in_flight"]]
    assert len(turns) == 80 and turns[:50] == [t["turn"] for t in state["in_flight"]]
    seconds = [t["seconds"] for t in every["in_flight"]]
    assert seconds == sorted(seconds, reverse=True)
    assert len(state["busiest"]) == len(state["recent"]) == 50
    assert len(json.dumps(found)) < 4_000
    # Its first turn may still be remembered on a loaded machine (finished turns are
    # forgotten as later ones start): one session found, by one or both of its turns.
    assert {t["session"] for t in found["recent"]} == {"user-1234"}
    assert [b["session"] for b in found["busiest"]] == ["user-1234"]
    sessions = [row["name"] for row in found["tree"] if row["name"].startswith("session:")]
    assert sessions == ["session:user-1234"]
    assert {t["session"] for t in fifty["in_flight"]} == {f"held-05{i}" for i in range(10)}
    assert refused.status_code == 400
