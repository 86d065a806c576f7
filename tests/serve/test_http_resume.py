"""Suspended turns through ``serve --http``: a turn that waits for approval ends with
``turn_suspended``; after the server and its host are restarted on the same store, an
answer POSTed to ``/turns/{turn}/answers/{call}`` resumes it; the same answer again is a
``duplicate``; an answer no turn waits for is 409 ``stale_answer``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.serve import HttpConfig, serve_http
from agcore_actors.store import InMemorySessions, session_store_spec
from tests.agent import suspend_rig as rig


async def _serve(
    r: rig.Rig, config: HttpConfig, stop: trio.Event, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    async with r.host() as host:
        await serve_http(host, config, shutdown=stop.wait, task_status=task_status)


@asynccontextmanager
async def server(r: rig.Rig) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP server over a new host of ``r`` (a restart, each time), and its client."""
    config = HttpConfig(port=0)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(_serve, r, config, stop)
        headers = {"authorization": f"Bearer {config.token}", "accept": "application/json"}
        async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            yield client
        stop.set()


async def test_a_suspended_turn_is_answered_over_http_after_a_restart() -> None:
    rig.RUNS.clear()
    async with ActorSystem() as system:
        store: ActorRef[Any] = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        r = rig.Rig(system, store, rig.SUSPEND)
        async with server(r) as client:
            reply = await client.post("/v1/sessions/a/turns", json={"text": "t1", "turn": "t1"})
            assert reply.status_code == 200, reply.text
            assert reply.json()["status"] == "suspended"
            assert [c["call_id"] for c in reply.json()["awaiting"]] == ["t1-g"]
        async with server(r) as client:  # restarted: the answer comes to a new host
            path = "/v1/sessions/a/turns/t1/answers/t1-g"
            reply = await client.post(path, json={"allow": True})
            assert reply.status_code == 200, reply.text
            body = reply.json()
            assert body["status"] == "resumed" and body["result"]["text"] == "done t1"
            again = await client.post(path, json={"allow": False})
            assert again.json()["status"] == "duplicate" and again.json()["allow"] is True
            stale = await client.post("/v1/sessions/a/turns/t9/answers/t9-g", json={})
            assert stale.status_code == 409 and stale.json()["error_kind"] == "stale_answer"
            bad = await client.post(path, json={"allow": "yes"})
            assert bad.status_code == 400
            nothing = await client.post("/v1/sessions/a/resume", json={})
            assert nothing.status_code == 409
    assert rig.RUNS == {"t1-f": 1, "t1-g": 1}
