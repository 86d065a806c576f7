"""A clustered host's ownership shows in serve's ``/metrics`` (through prometheus'
parser, over real HTTP) and in the observer's state, matching the keeper's counters."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.cluster import SessionOwnedElsewhere
from agcore_actors.serve import HttpConfig, serve_http
from tests.cluster.rig import Node, node, start_store

TOKEN = "cluster-metrics-token-0123"


async def _serve(
    n: Node, store: ActorRef[Any], stop: trio.Event, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    await serve_http(
        n.host,
        HttpConfig(port=0, token=TOKEN),
        store=store,
        shutdown=stop.wait,
        task_status=task_status,
    )


def samples(text: str) -> dict[str, float]:
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("agcore_cluster_")
    }


async def test_metrics_and_the_observer_show_leases_and_refusals(system: ActorSystem) -> None:
    store = await start_store(system)
    async with node(store, "a") as a, node(store, "b") as b, trio.open_nursery() as nursery:
        stop = trio.Event()
        url_a = await nursery.start(_serve, a, store, stop)
        url_b = await nursery.start(_serve, b, store, stop)
        await a.host.run("s1", "hi")
        await a.host.run("s2", "hi")
        with pytest.raises(SessionOwnedElsewhere):
            await b.host.run("s1", "hi")
        auth = {"authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=auth) as client:
            got_a = samples((await client.get(f"{url_a}/metrics")).text)
            got_b = samples((await client.get(f"{url_b}/metrics")).text)
            state = (await client.get(f"{url_a}/observer/state")).json()
        assert got_a["agcore_cluster_leases_held"] == 2
        assert got_a["agcore_cluster_acquired_total"] == 2
        assert got_b["agcore_cluster_leases_held"] == 0
        assert got_b["agcore_cluster_owned_elsewhere_total"] == 1
        for name in ("takeovers", "fenced_writes", "lease_losses", "self_fences"):
            assert got_a[f"agcore_cluster_{name}_total"] == 0
        assert state["cluster"]["host"] == "a" and state["cluster"]["leases_held"] == 2
        stop.set()
