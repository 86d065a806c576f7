"""Two hosts on each real backend the hosts can share (a SQLite file; PostgreSQL), on the
real clock with short leases: racing activations leave one owner, and a cut-off owner
stops serving before another host takes over, its late write refused by the store; and
callers moving sessions between the hosts lose no acknowledged turn and store none twice."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem, AgcoreError
from agcore_actors.agent import HostConfig, transcript_errors
from agcore_actors.cluster import SessionOwnedElsewhere
from agcore_actors.llm import UserMessage
from agcore_actors.store import Fenced, PostgresSessions, SessionBackendConfig, SqliteSessions
from agcore_actors.store import messages as sm
from tests.agent.fakes import echo
from tests.agent.stores import transcript
from tests.cluster.rig import node, start_store

# Short leases on the real clock: self-fence 1 s after a renewal was sent.
TIMING: dict[str, Any] = {"lease_ttl": 1.5, "renew_interval": 0.25, "fence_margin": 0.5}


@pytest.fixture(params=["sqlite", "postgresql"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionBackendConfig]:
    """A backend several hosts can share: a SQLite file, or a schema of its own on the
    real PostgreSQL server (leases on the server's clock)."""
    if request.param == "sqlite":
        yield SqliteSessions(str(tmp_path / "sessions.db"))
    else:
        yield PostgresSessions(request.getfixturevalue("postgres_url"))


async def test_racing_hosts_leave_one_owner(
    system: ActorSystem, shared: SessionBackendConfig
) -> None:
    store = await start_store(system, backend=shared)
    async with node(store, "a", **TIMING) as a, node(store, "b", **TIMING) as b:
        refused: list[SessionOwnedElsewhere] = []
        done: list[Any] = []

        async def turn(n: Any, sid: str) -> None:
            try:
                done.append(await n.host.run(sid, "hi"))
            except SessionOwnedElsewhere as exc:
                refused.append(exc)

        async with trio.open_nursery() as nursery:
            for k in range(10):
                nursery.start_soon(turn, a, f"s{k}")
                nursery.start_soon(turn, b, f"s{k}")
        assert len(done) == len(refused) == 10
        for k in range(10):
            owners = [n.id for n in (a, b) if n.host.is_live(f"s{k}")]
            assert len(owners) == 1
            lease = await store.ask(sm.FindLease(f"s{k}"))
            assert lease is not None and lease.live and [lease.host] == owners
            assert transcript_errors(await transcript(store, f"s{k}")) == []


async def test_a_cut_off_owner_stops_before_the_takeover_and_its_late_write_is_refused(
    system: ActorSystem, shared: SessionBackendConfig
) -> None:
    store = await start_store(system, backend=shared)
    async with (
        node(store, "a", model=echo(0.3), **TIMING) as a,
        node(store, "b", model=echo(0.01), **TIMING) as b,
    ):
        await a.host.run("s", "first")
        outcome: list[Any] = []

        async def a_turn() -> None:
            try:
                outcome.append(await a.host.run("s", "second"))
            except Exception as exc:
                outcome.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(a_turn)
            await trio.sleep(0.1)  # begun; its model answers at 0.3 s
            a.link.pause()  # the commit and the renewals wait on the link
            while True:  # B is refused while A's lease lives in the store
                a_serving = a.keeper.holds("s")
                try:
                    result = await b.host.run("s", "from b")
                except SessionOwnedElsewhere:
                    await trio.sleep(0.05)
                    continue
                break
            # A had stopped serving before the attempt that took the session over.
            assert not a_serving and result.status == "completed"
            assert a.keeper.snapshot().self_fences == 1
            a.link.resume()
            await trio.sleep(0.5)
        # A's commit was sent before A stopped serving: the store's refusal is its
        # caller's answer (the commit is not cut, so it is not delivered behind it).
        assert isinstance(outcome[0], Fenced) and outcome[0].reason == "stale"
        assert a.link.late == [] and a.link.sent.count("CommitTurn") == 2
        assert b.keeper.snapshot().takeovers == 1
        log = await transcript(store, "s")
        assert transcript_errors(log) == []
        texts = [m.content for m in log]
        assert "echo: second" not in texts and texts[-2:] == ["from b", "echo: from b"]


async def test_callers_moving_sessions_between_hosts_store_every_acknowledged_turn_once(
    system: ActorSystem, shared: SessionBackendConfig
) -> None:
    """12 clients, 3 turns each, over 6 sessions and two hosts that evict idle sessions
    after 0.2 s (so ownership moves): a refused client goes to the owner it is told."""
    rng = random.Random(5)
    store = await start_store(system, backend=shared)
    config = HostConfig(idle_ttl=0.2)
    sessions = [f"s{k}" for k in range(6)]
    async with (
        node(store, "a", model=echo(0.02), host_config=config, **TIMING) as a,
        node(store, "b", model=echo(0.02), host_config=config, **TIMING) as b,
    ):
        nodes = {n.id: n for n in (a, b)}
        acknowledged: dict[str, list[str]] = {s: [] for s in sessions}

        async def client(i: int) -> None:
            for j in range(3):
                sid, text = rng.choice(sessions), f"c{i}-t{j}"
                target = rng.choice([a, b])
                while True:
                    try:
                        result = await target.host.run(sid, text)
                    except SessionOwnedElsewhere as exc:
                        target = nodes[exc.host]
                        continue
                    except AgcoreError:  # busy, or the session moved meanwhile
                        await trio.sleep(0.05)
                        continue
                    if result.status == "completed":
                        acknowledged[sid].append(text)
                        break
                await trio.sleep(rng.random() * 0.4)

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(client, i)
        assert sum(n.keeper.snapshot().acquired for n in nodes.values()) > len(sessions)
        for sid in sessions:
            log = await transcript(store, sid)
            assert transcript_errors(log) == []
            users = [m.content for m in log if isinstance(m, UserMessage)]
            assert sorted(users) == sorted(acknowledged[sid])
