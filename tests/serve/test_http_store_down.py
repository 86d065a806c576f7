"""A store that cannot answer (stopped, crashed, unreachable): every route that needs it
is answered 503 with the failure's kind and ``Retry-After``, never a bare 500, and
nothing runs; the message names no address of the store."""

from __future__ import annotations

from pathlib import Path

import httpx2
import trio

from agcore_actors.serve import HttpConfig, serve_http
from agcore_actors.store import SqliteSessions, session_store_spec
from tests.serve.runtime import served
from tests.serve.test_http import JSON


async def test_routes_that_need_a_store_that_is_down_get_503_and_its_kind(tmp_path: Path) -> None:
    async with served() as s:
        system = s.host.system
        broken = await system.root.start_child(
            session_store_spec("broken", backend=SqliteSessions(str(tmp_path / "s.db")))
        )
        await system.root.stop_child("broken")  # every ask of it now fails
        config = HttpConfig(port=0, token=s.config.token)
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                lambda task_status: serve_http(
                    s.host, config, store=broken, shutdown=stop.wait, task_status=task_status
                )
            )
            async with httpx2.AsyncClient(base_url=url, headers=s.headers) as client:
                answers = [
                    await client.get("/v1/sessions/x"),
                    await client.get("/v1/sessions"),
                    # A retried turn id is checked against the store before it runs.
                    await client.post(
                        "/v1/sessions/x/turns", json={"text": "hi", "turn": "t1"}, headers=JSON
                    ),
                ]
            for r in answers:
                assert r.status_code == 503, (r.status_code, r.text)
                assert r.json()["error_kind"] == "actor_stopped", r.text
                assert int(r.headers["retry-after"]) >= 1
                assert "broken" not in r.json()["error"]
            assert not s.host.is_live("x")  # the turn did not run
            stop.set()
