"""The observer: its state document matches the system's and the host's snapshots while
50 sessions run; the page is plain HTML served from the package, token-checked."""

from __future__ import annotations

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
    async with served() as s, httpx2.AsyncClient(base_url=s.url, timeout=30) as client:
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
        assert len(state["in_flight"]) == 50
        assert {t["step"] for t in state["in_flight"]} <= {"waiting", "turn_started", "text_delta"}
        after = (await client.get("/observer/state")).json()
        assert len(after["recent"]) == 20 and after["in_flight"] == []
        assert all(t["events"][-1] == "turn_completed" for t in after["recent"])


async def test_the_page_is_served_from_the_package_and_needs_the_token() -> None:
    async with served(token="s3cret") as s, httpx2.AsyncClient(base_url=s.url) as client:
        assert (await client.get("/observer")).status_code == 401
        page = await client.get("/observer", params={"access_token": "s3cret"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "observer/state" in page.text and "://" not in page.text  # nothing from elsewhere
        state = await client.get("/observer/state", params={"access_token": "s3cret"})
        assert state.status_code == 200 and "tree" in state.json()
        assert (
            await client.get("/v1/sessions", params={"access_token": "s3cret"})
        ).status_code == 401
