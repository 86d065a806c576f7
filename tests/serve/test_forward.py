"""Forwarding between hosts: two real servers on 127.0.0.1 sharing their tokens, host A
told that sessions ``b-*`` live on host B. Everything a client does through A for such a
session happens on B (streamed turn, reattach, cancel, approval, read, delete), no
request makes two hops, hop-by-hop headers and the Origin stay behind, B takes the Host
and the token it gets, a tenant's session is found by its stored id and sent on by the
tenant's own, and an owner that cannot be reached gets 503."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx2
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from agcore_actors.serve._auth import Tenant
from agcore_actors.serve._forward import ForwardConfig, Forwarder, Owner
from tests.serve.helpers import AUTH, TOKEN
from tests.serve.runtime import Served, served
from tests.serve.sse import connect_sse
from tests.serve.test_http import JSON, start_and_leave


@attrs.define
class Pair:
    a: Served
    b: Served
    forwarder: Forwarder
    #: The ids A asked ``locate`` about.
    located: list[str]


@asynccontextmanager
async def pair(owner_url: str | None = None, **config: object) -> AsyncIterator[Pair]:
    """Hosts A and B with the same token (and ``config``), as a cluster's hosts share
    their configuration; A forwards sessions whose stored id is ``b-*`` or ``<tenant>/b-*``
    to B (or to ``owner_url``)."""
    async with served(token=TOKEN, **config) as b:
        target = owner_url or b.url
        located: list[str] = []

        async def locate(session: str) -> Owner | None:
            located.append(session)
            owned = session.rpartition("/")[2].startswith("b-")
            return Owner(host_id="B", address=target) if owned else None

        forwarder = Forwarder(locate, ForwardConfig(host_id="A", connect_timeout=1.0))
        try:
            async with served(forward=forwarder, token=TOKEN, **config) as a:
                yield Pair(a, b, forwarder, located)
        finally:
            await forwarder.aclose()


async def events_of(client: httpx2.AsyncClient, method: str, url: str, **kw: Any) -> list[Any]:
    async with connect_sse(client, method, url, **kw) as source:
        return [json.loads(event.data) async for event in source.aiter_sse()]


def forwards(metrics: str) -> dict[str, float]:
    found = {}
    for family in text_string_to_metric_families(metrics):
        if family.name == "agcore_cluster_forwards":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    found[sample.labels["outcome"]] = sample.value
    return found


async def test_a_turn_for_a_session_owned_elsewhere_runs_and_is_stored_on_its_owner() -> None:
    async with pair() as p, p.a.client() as client:
        async with connect_sse(
            client, "POST", "/v1/sessions/b-1/turns", json={"text": "hi", "turn": "t1"}
        ) as source:
            assert source.response.headers["x-turn-id"] == "t1"
            assert source.response.headers["content-type"] == "text/event-stream"
            events = [json.loads(e.data) async for e in source.aiter_sse()]
        assert events[0]["event"] == "turn_started" and events[-1]["event"] == "turn_completed"
        assert p.b.host.is_live("b-1") and not p.a.host.is_live("b-1")
        # Read through A: B's store answers; local sessions stay A's.
        session = (await client.get("/v1/sessions/b-1")).json()
        assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
        assert session["live"] is True
        r = await client.post("/v1/sessions/a-1/turns", json={"text": "hi"}, headers=JSON)
        assert r.json()["status"] == "completed" and p.a.host.is_live("a-1")
        assert forwards((await client.get("/metrics")).text) == {
            "forwarded": 2.0, "unreachable": 0.0, "broken": 0.0, "unlocated": 0.0,
            "moved": 0.0,
        }  # fmt: skip
        assert (await client.delete("/v1/sessions/b-1")).status_code == 204
        async with p.b.client() as direct:
            assert (await direct.get("/v1/sessions/b-1")).status_code == 404


async def test_reattach_cancel_and_approval_reach_the_owner() -> None:
    async with pair() as p, p.a.client() as client:
        turn = await start_and_leave(p.a, "b-2", "slow")
        events = await events_of(client, "GET", f"/v1/sessions/b-2/turns/{turn}")
        assert events[0]["event"] == "turn_started"
        assert events[-1]["result"]["text"] == "one two three four five"

        seen: list[dict[str, Any]] = []
        async with connect_sse(
            client, "POST", "/v1/sessions/b-2/turns", json={"text": "hold"}
        ) as source:
            async for event in source.aiter_sse():
                seen.append(json.loads(event.data))
                if len(seen) == 1:
                    r = await client.post("/v1/sessions/b-2/cancel", json={})
                    assert r.json() == {"cancelled": True}
        assert seen[-1]["event"] == "turn_cancelled"

        seen = []
        async with connect_sse(
            client, "POST", "/v1/sessions/b-3/turns", json={"text": "delete /x"}
        ) as source:
            async for event in source.aiter_sse():
                seen.append(json.loads(event.data))
                if seen[-1]["event"] == "approval_requested":
                    r = await client.post(
                        f"/v1/sessions/b-3/approvals/{seen[-1]['call_id']}", json={"allow": True}
                    )
                    assert r.json() == {"answered": True}
        assert seen[-1]["event"] == "turn_completed"
        assert not p.a.host.is_live("b-2") and not p.a.host.is_live("b-3")


async def test_a_forwarded_request_is_never_forwarded_again() -> None:
    # B is told nothing; A forwards to itself: were the header ignored, the request would
    # loop until something broke. It makes one hop and A serves it.
    async with served() as b:
        del b
        loop_url: list[str] = []

        async def locate(session: str) -> Owner | None:
            return Owner(host_id="A", address=loop_url[0])

        forwarder = Forwarder(locate, ForwardConfig(host_id="A"))
        try:
            async with served(forward=forwarder) as a, a.client() as client:
                loop_url.append(a.url)
                r = await client.post("/v1/sessions/x/turns", json={"text": "hi"}, headers=JSON)
                assert r.status_code == 200 and r.json()["status"] == "completed"
                assert a.host.is_live("x")
                assert forwarder.counts["forwarded"] == 1
        finally:
            await forwarder.aclose()


async def test_an_unreachable_owner_gets_503_and_nothing_runs() -> None:
    with trio.socket.socket() as closed:
        await closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    async with (
        pair(owner_url=f"http://127.0.0.1:{port}") as p,
        p.a.client() as client,
    ):
        # Its lease lasts for ever (``seconds_left`` unknown): no wait, 503 at once.
        r = await client.post("/v1/sessions/b-1/turns", json={"text": "hi"})
        assert r.status_code == 503 and r.json()["error_kind"] == "owner_unreachable"
        assert not p.a.host.is_live("b-1") and not p.b.host.is_live("b-1")
        assert p.forwarder.counts["unreachable"] == 1


async def test_a_body_over_the_limit_is_refused_before_it_is_forwarded() -> None:
    async with pair() as p, p.a.client() as client:

        async def chunks() -> AsyncIterator[bytes]:  # no content-length
            for _ in range(100_000):
                yield b"x" * 64

        r = await client.post("/v1/sessions/b-1/turns", content=chunks())
        assert r.status_code == 413
        assert p.forwarder.counts == {
            "forwarded": 0,
            "unreachable": 0,
            "broken": 0,
            "unlocated": 0,
            "moved": 0,
        }


async def test_hop_by_hop_headers_stay_behind_and_nothing_is_added_but_the_hop_header() -> None:
    received: list[bytes] = []

    async def owner(stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some()
        received.append(data)
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
            b"x-owner: B\r\ncontent-length: 2\r\n\r\n{}"
        )

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, owner, 0)
        port = listeners[0].socket.getsockname()[1]
        async with pair(owner_url=f"http://127.0.0.1:{port}") as p:
            headers = {
                **AUTH,
                "connection": "x-private",
                "x-private": "secret",
                "keep-alive": "timeout=5",
                "x-kept": "1",
                "origin": p.a.url,
            }
            async with httpx2.AsyncClient(base_url=p.a.url) as client:
                client.headers.clear()
                r = await client.get("/v1/sessions/b-9", headers=headers)
                assert r.status_code == 200 and r.headers["x-owner"] == "B"
                assert len(r.headers.get_list("date")) == 1 and "connection" not in r.headers
        nursery.cancel_scope.cancel()
    head = received[0].decode().lower()
    assert head.startswith("get /v1/sessions/b-9 http/1.1")
    assert "x-kept: 1" in head and "x-agcore-forwarded-by: a" in head
    # The owner checks the same token, and the Host names the owner itself (its Host
    # check would refuse A's name); the Origin was checked on A, against A's own origin.
    assert f"authorization: bearer {TOKEN.lower()}" in head
    assert f"\r\nhost: 127.0.0.1:{port}\r\n" in head and head.count("\r\nhost:") == 1
    assert "x-private" not in head and "keep-alive: timeout" not in head and "origin" not in head
    assert "accept-encoding" not in head and "user-agent" not in head


@pytest.mark.parametrize("token", ["s3cret-0123456789"])
async def test_the_clients_token_is_checked_here_and_forwarded(token: str) -> None:
    async with served(token=token) as b:

        async def locate(session: str) -> Owner | None:
            return Owner(host_id="B", address=b.url)

        forwarder = Forwarder(locate, ForwardConfig(host_id="A"))
        try:
            async with served(forward=forwarder, token=token) as a, httpx2.AsyncClient() as c:
                url = f"{a.url}/v1/sessions/b-1/turns"
                assert (await c.post(url, json={"text": "hi"})).status_code == 401
                bad = {"authorization": f"Bearer {token}x", **JSON}
                assert (await c.post(url, json={"text": "hi"}, headers=bad)).status_code == 401
                assert forwarder.counts["forwarded"] == 0 and not b.host.is_live("b-1")
                good = {"authorization": f"Bearer {token}", **JSON}
                r = await c.post(url, json={"text": "hi"}, headers=good)
                assert r.status_code == 200 and b.host.is_live("b-1")
        finally:
            await forwarder.aclose()


async def test_many_concurrent_forwarded_turns_each_run_once_on_the_owner() -> None:
    async with pair() as p, p.a.client() as client:
        results: dict[str, str] = {}

        async def turn(i: int) -> None:
            if i % 3 == 0:  # a third leave mid-stream and reattach
                turn_id = await start_and_leave(p.a, f"b-{i % 10}", "slow")
                events = await events_of(client, "GET", f"/v1/sessions/b-{i % 10}/turns/{turn_id}")
                results[turn_id] = events[-1]["event"]
                return
            body = {"text": f"hi {i}", "turn": f"t{i}"}
            events = await events_of(client, "POST", f"/v1/sessions/b-{i % 10}/turns", json=body)
            results[f"t{i}"] = events[-1]["event"]

        async with trio.open_nursery() as nursery:
            for i in range(30):
                nursery.start_soon(turn, i)
        assert len(results) == 30 and set(results.values()) == {"turn_completed"}
        stored: list[str] = []
        for s in range(10):
            messages = (await client.get(f"/v1/sessions/b-{s}")).json()["messages"]
            stored += [m["turn"] for m in messages if m["role"] == "user"]
        assert sorted(stored) == sorted(results)
        assert not any(p.a.host.is_live(f"b-{s}") for s in range(10))


async def test_a_client_leaving_while_the_owner_is_silent_closes_the_forwarded_request() -> None:
    # A stopped owner: its kernel takes the connection and the request, nothing answers.
    # The client gives up; the forward must not wait for the owner forever.
    closed = trio.Event()
    connected = trio.Event()

    async def silent_owner(stream: trio.SocketStream) -> None:
        connected.set()
        with contextlib.suppress(trio.BrokenResourceError):
            while await stream.receive_some():
                pass
        closed.set()  # the forwarding host hung up

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, silent_owner, 0)
        port = listeners[0].socket.getsockname()[1]
        async with pair(owner_url=f"http://127.0.0.1:{port}") as p:
            async with p.a.client(timeout=0.5) as client:
                with pytest.raises(httpx2.ReadTimeout):
                    await client.post("/v1/sessions/b-1/turns", json={"text": "hi"})
            await connected.wait()
            with trio.fail_after(5):
                await closed.wait()
        nursery.cancel_scope.cancel()


async def test_a_lookup_that_fails_gets_503_and_nothing_runs() -> None:
    from agcore_actors.store import StoreUnavailable

    async def locate(session: str) -> Owner | None:
        raise StoreUnavailable("the database is gone")

    forwarder = Forwarder(locate, ForwardConfig(host_id="A"))
    try:
        async with served(forward=forwarder) as a, a.client() as c:
            r = await c.post("/v1/sessions/x/turns", json={"text": "hi"})
            assert r.status_code == 503 and r.json()["error_kind"] == "owner_unknown"
            assert not a.host.is_live("x") and forwarder.counts["unlocated"] == 1
    finally:
        await forwarder.aclose()


async def test_a_browser_post_from_the_first_hosts_own_origin_runs_on_the_owner() -> None:
    # A checked the Origin against its own address; the owner listens on another port,
    # so the same Origin sent on would be another origin there (403 bad_origin).
    async with pair() as p, p.a.client(headers={"origin": p.a.url}) as client:
        r = await client.post("/v1/sessions/b-1/turns", json={"text": "hi"}, headers=JSON)
        assert r.status_code == 200 and r.json()["status"] == "completed"
        assert p.b.host.is_live("b-1")
        async with p.a.client(headers={"origin": p.b.url}) as foreign:
            r = await foreign.post("/v1/sessions/b-2/turns", json={"text": "hi"}, headers=JSON)
            assert r.status_code == 403 and r.json()["error_kind"] == "bad_origin"
        assert not p.b.host.is_live("b-2") and p.forwarder.counts["forwarded"] == 1


async def test_a_tenants_session_is_located_by_its_stored_id_and_sent_on_by_its_own() -> None:
    acme = Tenant(name="acme", token="acme-token-0123456789")
    other = Tenant(name="other", token="other-token-0123456789")
    async with pair(tenants=(acme, other)) as p:
        as_acme = {"authorization": f"Bearer {acme.token}", **JSON}
        async with httpx2.AsyncClient(base_url=p.a.url, headers=as_acme) as client:
            r = await client.post("/v1/sessions/b-1/turns", json={"text": "hi", "turn": "t1"})
            assert r.status_code == 200 and r.json()["status"] == "completed"
            # Stored on B under acme's prefix, applied once (by B, from the token).
            assert p.b.host.is_live("acme/b-1") and not p.b.host.is_live("acme/acme/b-1")
            assert not p.a.host.is_live("acme/b-1")
            session = (await client.get("/v1/sessions/b-1")).json()
            assert session["session"] == session["record"]["id"] == "b-1"
            assert session["live"] is True and len(session["messages"]) == 2
            r = await client.post("/v1/sessions/b-1/turns", json={"text": "hi", "turn": "t1"})
            assert r.json()["status"] == "completed"  # reattached on B, not run again
            listed = (await client.get("/v1/sessions")).json()
            assert listed["sessions"] == []  # A's own store: nothing of acme's ran here
        as_other = {"authorization": f"Bearer {other.token}"}
        async with httpx2.AsyncClient(base_url=p.a.url, headers=as_other) as client:
            assert (await client.get("/v1/sessions/b-1")).status_code == 404
            assert (await client.delete("/v1/sessions/b-1")).status_code == 404
        assert p.b.host.is_live("acme/b-1") and p.forwarder.counts["forwarded"] == 5
        assert p.located == ["acme/b-1"] * 3 + ["other/b-1"] * 2
