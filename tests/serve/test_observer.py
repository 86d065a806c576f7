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
        assert len(state["in_flight"]) == 50
        assert {t["step"] for t in state["in_flight"]} <= {"waiting", "turn_started", "text_delta"}
        after = (await client.get("/observer/state")).json()
        assert len(after["recent"]) == 20 and after["in_flight"] == []
        assert all(t["events"][-1] == "turn_completed" for t in after["recent"])


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
