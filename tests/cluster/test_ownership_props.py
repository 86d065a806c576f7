"""Ownership against schedules hypothesis draws: three hosts on one store (virtual time),
turns sent to random hosts at random times (a refused caller goes to the owner it is
told), hosts cut off from the store for random spans, sessions closed. Checked all along:
no session is live on two hosts that both hold its lease; at the end: every acknowledged
turn stored exactly once, every transcript valid, every live session holding its lease
and every lease held of a live session."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings

from agcore_actors import ActorSystem, AgcoreError
from agcore_actors.agent import HostConfig, transcript_errors
from agcore_actors.cluster import SessionOwnedElsewhere
from agcore_actors.llm import AssistantMessage
from tests.agent.fakes import echo
from tests.agent.stores import transcript
from tests.cluster.rig import TTL, Node, node, start_store

HOSTS = ("a", "b", "c")
SESSIONS = ("s0", "s1", "s2")

turns = st.tuples(
    st.just("turn"), st.floats(0, 30), st.sampled_from(HOSTS), st.sampled_from(SESSIONS)
)
cuts = st.tuples(st.just("cut"), st.floats(0, 30), st.sampled_from(HOSTS), st.floats(0.5, 15))
closes = st.tuples(
    st.just("close"), st.floats(0, 30), st.sampled_from(HOSTS), st.sampled_from(SESSIONS)
)
schedules = st.lists(st.one_of(turns, turns, cuts, closes), min_size=1, max_size=25)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules, st.sampled_from([0.2, 1.0, 4.0]))
# B is cut off while its first turn commits, self-fences with the commit in flight, and
# the link delivers the commit before the lease expires in the store: its caller must
# hear that the turn completed, not that it failed (and retry it).
@example(
    schedule=[
        ("turn", 0.0, "b", "s0"),
        ("cut", 13.731909138856826, "b", 8.926946247409518),
        ("cut", 0.0, "b", 13.463372346612102),
    ],
    latency=1.0,
)
def test_any_schedule_keeps_one_owner_and_every_acknowledged_turn_once(
    schedule: list[tuple[Any, ...]], latency: float
) -> None:
    clock = trio.testing.MockClock(autojump_threshold=0)
    trio.run(_scenario, schedule, latency, clock=clock)


async def _scenario(schedule: list[tuple[Any, ...]], latency: float) -> None:
    async with ActorSystem(strict=True, seed=0) as system:
        store = await start_store(system)
        config = HostConfig(idle_ttl=3.0)
        async with (
            node(store, "a", model=echo(latency), host_config=config) as a,
            node(store, "b", model=echo(latency), host_config=config) as b,
            node(store, "c", model=echo(latency), host_config=config) as c,
        ):
            nodes = {n.id: n for n in (a, b, c)}
            acknowledged: dict[str, list[str]] = {s: [] for s in SESSIONS}
            done = trio.Event()

            async def monitor() -> None:
                while not done.is_set():
                    for sid in SESSIONS:
                        owners = [
                            n.id
                            for n in nodes.values()
                            if n.host.is_live(sid) and n.keeper.holds(sid)
                        ]
                        assert len(owners) <= 1, (sid, owners)
                    await trio.sleep(0.05)

            async def turn(at: float, first: str, sid: str, text: str) -> None:
                await trio.sleep(at)
                target = nodes[first]
                for _ in range(100):
                    try:
                        result = await target.host.run(sid, text)
                    except SessionOwnedElsewhere as exc:
                        target = nodes[exc.host]
                        await trio.sleep(0.1)
                        continue
                    except AgcoreError:
                        await trio.sleep(0.5)
                        continue
                    if result.status == "completed":
                        acknowledged[sid].append(text)
                    return

            async def cut(at: float, victim: Node, span: float) -> None:
                await trio.sleep(at)
                if not victim.link.paused:
                    victim.link.pause()
                    await trio.sleep(span)
                    victim.link.resume()

            async def close(at: float, n: Node, sid: str) -> None:
                await trio.sleep(at)
                await n.host.close(sid)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(monitor)
                async with trio.open_nursery() as steps:
                    for i, (kind, at, host, arg) in enumerate(schedule):
                        if kind == "turn":
                            steps.start_soon(turn, at, host, arg, f"t{i}")
                        elif kind == "cut":
                            steps.start_soon(cut, at, nodes[host], arg)
                        else:
                            steps.start_soon(close, at, nodes[host], arg)
                await trio.sleep(TTL * 2)  # idle sessions go, lapsed leases lapse
                done.set()
            for n in nodes.values():
                live = set(n.host.live_sessions)
                assert {s for s in live if n.keeper.holds(s)} == live
                assert n.keeper.snapshot().leases_held == len(live)
            for sid in SESSIONS:
                log = await transcript(store, sid)
                assert transcript_errors(log) == []
                answers = [m.content for m in log if isinstance(m, AssistantMessage)]
                for text in acknowledged[sid]:
                    assert answers.count(f"echo: {text}") == 1, (sid, text)
