"""Tenants over HTTP: named tokens with scopes, each seeing and touching only its own
sessions. Tenant A cannot list, read, reattach to, cancel, approve in or delete tenant
B's sessions, even knowing their ids and turn ids; the observer and /metrics need
``admin``; a scope a token lacks is 403 and changes nothing."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import trio

from agcore_actors.serve import HttpConfig, Tenant
from tests.serve.runtime import Served, served

JSON = {"accept": "application/json"}
A = Tenant(name="alice", token="alice-token-0123456789")
B = Tenant(name="bob", token="bob-token-0123456789ab")
READER = Tenant(name="alice-ro", token="reader-token-012345678", scopes=["read"])
ADMIN = Tenant(name="ops", token="ops-token-0123456789abc", scopes=["admin"])


def as_(s: Served, tenant: Tenant) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=s.url, headers={"authorization": f"Bearer {tenant.token}"})


async def test_a_tenant_cannot_see_or_touch_another_tenants_sessions() -> None:
    """Fails on df941de: one token could list, read, reattach to, cancel and delete any
    session (there were no tenants)."""
    tenants = (A, B, ADMIN)
    async with served(tenants=tenants, drain_timeout=0) as s, as_(s, A) as a, as_(s, B) as b:
        secret = {"text": "my password is hunter2", "turn": "t-secret"}
        r = await b.post("/v1/sessions/s1/turns", json=secret, headers=JSON)
        assert r.status_code == 200 and r.json()["session"] == "s1"
        async with trio.open_nursery() as nursery:

            async def hold() -> None:
                await b.post("/v1/sessions/held/turns", json={"text": "hold", "turn": "th"},
                             headers=JSON)  # fmt: skip

            nursery.start_soon(hold)
            while not s.host.snapshot().busy:  # noqa: ASYNC110
                await trio.sleep(0.01)
            # alice knows bob's ids and turn ids and tries everything
            assert (await a.get("/v1/sessions")).json()["sessions"] == []
            assert (await a.get("/v1/sessions/s1")).status_code == 404
            assert (await a.get("/v1/sessions/s1/turns/t-secret")).status_code == 404
            assert (await a.get("/v1/sessions/held/turns/th", headers=JSON)).status_code == 404
            assert (await a.post("/v1/sessions/held/cancel", json={})).json() == {
                "cancelled": False
            }
            r = await a.post("/v1/sessions/held/approvals/c1", json={"allow": True})
            assert r.json() == {"answered": False}
            assert (await a.delete("/v1/sessions/s1")).status_code == 404
            assert (await a.get("/observer/state")).status_code == 403
            assert (await a.get("/metrics")).status_code == 403
            assert s.host.snapshot().busy == 1  # bob's turn still runs
            # alice's own s1 is another session
            mine = await a.post("/v1/sessions/s1/turns", json={"text": "hi", "turn": "t-secret"},
                                headers=JSON)  # fmt: skip
            assert mine.status_code == 200 and mine.json()["text"] == "hello"
            assert [r["id"] for r in (await a.get("/v1/sessions")).json()["sessions"]] == ["s1"]
            await b.post("/v1/sessions/held/cancel", json={})
        bobs = (await b.get("/v1/sessions/s1")).json()
        assert bobs["record"]["turns"] == 1 and bobs["record"]["id"] == "s1"
        assert "hunter2" in str(bobs["messages"])
        alices = (await a.get("/v1/sessions/s1")).json()
        assert "hunter2" not in str(alices)
        listed = sorted(r["id"] for r in (await b.get("/v1/sessions")).json()["sessions"])
        assert listed == ["held", "s1"]


async def test_scopes_limit_what_a_token_does() -> None:
    async with served(tenants=(A, READER, ADMIN)) as s:
        async with as_(s, READER) as reader, as_(s, ADMIN) as admin, as_(s, A) as a:
            r = await reader.post("/v1/sessions/x/turns", json={"text": "hi"}, headers=JSON)
            assert r.status_code == 403 and r.json()["error_kind"] == "forbidden"
            assert (await reader.delete("/v1/sessions/x")).status_code == 403
            assert (await reader.get("/v1/sessions")).status_code == 200
            assert (await admin.get("/metrics")).status_code == 200
            assert (await admin.get("/observer/state")).status_code == 200
            r = await admin.post("/v1/sessions/x/turns", json={"text": "hi"}, headers=JSON)
            assert r.status_code == 403
            assert (await a.get("/observer/state")).status_code == 403
        async with s.client() as own:  # the server's own token has every scope
            assert (await own.get("/v1/sessions")).json()["sessions"] == []


async def test_tenants_at_once_never_see_each_other() -> None:
    """Twenty tenants run turns at once in sessions of the same names; each lists and
    reads exactly its own."""
    tenants = [Tenant(name=f"t{i}", token=f"token-of-tenant-{i:04d}") for i in range(20)]
    async with served(tenants=tenants) as s:

        async def work(tenant: Tenant) -> None:
            async with as_(s, tenant) as client:
                for name in ("a", "b"):
                    body = {"text": f"hi from {tenant.name}"}
                    r = await client.post(f"/v1/sessions/{name}/turns", json=body, headers=JSON)
                    assert r.json()["status"] == "completed"
                listed = (await client.get("/v1/sessions")).json()["sessions"]
                assert sorted(r["id"] for r in listed) == ["a", "b"]
                messages: list[dict[str, Any]] = (await client.get("/v1/sessions/a")).json()[
                    "messages"
                ]
                assert messages[0]["content"] == f"hi from {tenant.name}"

        async with trio.open_nursery() as nursery:
            for tenant in tenants:
                nursery.start_soon(work, tenant)


def test_tenants_are_checked_where_they_are_built() -> None:
    with pytest.raises(ValueError, match="unknown scope"):
        Tenant(name="x", token="t", scopes=["write"])
    with pytest.raises(ValueError, match="must be an id"):
        Tenant(name="a/b", token="t")
    with pytest.raises(ValueError, match="share a token"):
        HttpConfig(tenants=(A, Tenant(name="other", token=A.token)))
    with pytest.raises(ValueError, match="distinct"):
        HttpConfig(tenants=(A, Tenant(name="alice", token="another-token")))
    with pytest.raises(ValueError, match="at least 16"):
        HttpConfig(host="0.0.0.0", token=None, tenants=(Tenant(name="x", token="short"),))
    assert A.token not in repr(A)
