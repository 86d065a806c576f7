"""SessionHost: activation on demand, idle and cap eviction through one path, restore with
history, crash parking, and a drain that commits what runs at shutdown."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.actor import ActorStopped
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    HostConfig,
    Session,
    SessionHost,
    SessionParked,
    SessionState,
    StoreTurns,
    transcript_errors,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import AssistantMessage, ProviderRegistry, RetryConfig, provider_actor
from agcore_actors.testing import ScriptedProvider
from tests.agent.fakes import echo, scripted
from tests.agent.stores import start_store, stored, transcript


async def make_host(
    system: ActorSystem, script: list[list[Any]], crash: bool = False, **config: Any
) -> tuple[SessionHost, ActorRef[Any], ScriptedProvider]:
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    store_ref, turns = await start_store(system)
    store = CrashingStore(store_ref) if crash else turns
    bundle = AgentBuilder().provider(llm).store(store).agent(Agent(name="a")).build()
    return SessionHost(system, bundle, HostConfig(**config)), store_ref, provider


async def test_idle_sessions_are_evicted_and_restored_with_their_history(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host, _, provider = await make_host(system, [[AssistantMessage("ok")]], idle_ttl=10.0)
    async with host:
        for sid in ("a", "b", "c"):
            result = await host.run(sid, f"hello {sid}")
            assert result.status == "completed"
        assert sorted(host.live_sessions) == ["a", "b", "c"]
        await trio.sleep(20)
        assert host.live_sessions == []
        snap = host.snapshot()
        assert snap.evicted_idle == 3 and snap.deactivated == 3
        assert [i.name for i in system.snapshot() if i.name.startswith("session:")] == []
        await host.run("a", "again")
        sent = provider.requests[-1].messages
        assert [m.content for m in sent] == ["hello a", "ok", "again"]
        assert host.snapshot().activated == 4


async def test_the_live_cap_evicts_the_least_recently_used_idle_session(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host, _, _ = await make_host(system, [[AssistantMessage("ok")]], max_sessions=2)
    async with host:
        await host.run("a", "1")
        await host.run("b", "1")
        await host.run("a", "2")  # a is now the most recently used
        await host.run("c", "1")
        assert sorted(host.live_sessions) == ["a", "c"]
        assert host.snapshot().evicted_cap == 1


class CrashingStore(StoreTurns):
    async def begin(self, session: str, *args: Any, **kwargs: Any) -> int:
        if session == "bad":
            raise RuntimeError("disk on fire")
        return await super().begin(session, *args, **kwargs)

    async def begin_and_load(self, session: str, *args: Any, **kwargs: Any) -> SessionState:
        if session == "bad":
            raise RuntimeError("disk on fire")
        return await super().begin_and_load(session, *args, **kwargs)


async def test_a_session_that_keeps_crashing_is_parked_and_the_host_goes_on(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host, _, _ = await make_host(system, [[AssistantMessage("ok")]], crash=True, crash_limit=2)
    async with host:
        for _ in range(2):
            with pytest.raises(RuntimeError):
                await host.run("bad", "x")
        with pytest.raises(SessionParked):
            await host.run("bad", "x")
        assert (await host.run("good", "x")).status == "completed"
        assert host.snapshot().crashes == 2 and host.snapshot().parked == 1
        await host.close("bad")
        with pytest.raises(RuntimeError):
            await host.run("bad", "x")


async def test_shutdown_drains_then_cancels_and_commits_running_turns(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host, store, _ = await make_host(
        system, [[1000.0, AssistantMessage("late")]], drain_timeout=5.0
    )
    results: list[am.TurnResult] = []

    async def turn(sid: str) -> None:
        results.append(await host.run(sid, "slow"))

    async with trio.open_nursery() as nursery, host:
        nursery.start_soon(turn, "x")
        nursery.start_soon(turn, "y")
        await trio.sleep(1)
        assert host.snapshot().turns_in_flight == 2
        # leaving the host drained for 5 s, then cancelled both turns, which committed
    assert sorted(r.status for r in results) == ["cancelled", "cancelled"]
    for sid in ("x", "y"):
        saved = await stored(store, sid)
        assert saved is not None and saved.record.open_turn is None
        assert transcript_errors(await transcript(store, sid)) == []


async def test_shutdown_refuses_new_turns_so_a_busy_host_still_drains_in_time(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host, store, _ = await make_host(system, [[1.0, AssistantMessage("ok")]], drain_timeout=5.0)
    refused: list[str] = []

    async def client(sid: str, offset: float) -> None:
        # Turns back to back, staggered, so the host is never idle while they come.
        await trio.sleep(offset)
        for _ in range(200):
            try:
                await host.run(sid, "again")
            except ActorStopped:
                refused.append(sid)
                return

    async with trio.open_nursery() as nursery:
        async with host:
            for i, sid in enumerate("abc"):
                nursery.start_soon(client, sid, i * 0.3)
            await trio.sleep(3)
            leaving = trio.current_time()
        # Turns that ran when the drain began had 5 s; none was admitted after it.
        assert trio.current_time() - leaving <= 5.0
    assert sorted(refused) == ["a", "b", "c"]
    for sid in "abc":
        saved = await stored(store, sid)
        assert saved is not None and saved.record.open_turn is None
        assert transcript_errors(await transcript(store, sid)) == []


async def echo_host(system: ActorSystem, **config: Any) -> SessionHost:
    """A host whose model answers after one (virtual) second."""
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(echo(1.0)), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    _, turns = await start_store(system)
    bundle = AgentBuilder().provider(llm).store(turns).agent(Agent(name="a")).build()
    return SessionHost(system, bundle, HostConfig(**config))


async def test_concurrent_first_messages_keep_to_the_live_cap(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host = await echo_host(system, max_sessions=2)
    async with host:
        await host.run("a", "1")
        await host.run("b", "1")  # two idle sessions fill the cap
        peak = 0

        async def watch() -> None:
            nonlocal peak
            while True:
                peak = max(peak, len(host.live_sessions))
                await trio.sleep(0.01)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            async with trio.open_nursery() as turns:
                for session in ("c", "d"):
                    turns.start_soon(host.run, session, "1")
            nursery.cancel_scope.cancel()
        assert peak <= 2
        assert sorted(host.live_sessions) == ["c", "d"]
        assert host.snapshot().evicted_cap == 2


async def test_a_host_pushed_over_its_cap_by_busy_sessions_shrinks_back_as_turns_end(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host = await echo_host(system, max_sessions=1)
    async with host:
        async with trio.open_nursery() as turns:
            for session in ("a", "b", "c"):
                turns.start_soon(host.run, session, "1")
        await trio.testing.wait_all_tasks_blocked()
        assert len(host.live_sessions) == 1
        assert host.snapshot().evicted_cap == 2


async def test_a_live_idle_session_holds_no_task_and_wakes_with_its_state(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host, _, provider = await make_host(system, [[AssistantMessage("ok")]])
    async with host:
        await host.run("a", "one")
        await trio.testing.wait_all_tasks_blocked()
        cell = system.lookup("session:a")._cell
        # awake for a while (a next turn soon pays no wake-up), then dormant
        warm = cell.task
        assert warm is not None and cell.pool is not None
        await trio.sleep(Session.hibernate_after / 2)
        assert (await host.ask("a", am.GetSessionInfo())).turns == 1
        assert cell.task is warm  # served by the same task: it stayed awake
        await trio.sleep(Session.hibernate_after * 0.9)
        assert cell.task is warm  # the nap starts again after each request
        await trio.sleep(Session.hibernate_after * 0.2)
        await trio.testing.wait_all_tasks_blocked()
        assert host.is_live("a") and cell.task is None and cell.pool is None
        info = await host.ask("a", am.GetSessionInfo())
        assert info.turns == 1 and info.messages == 2
        async with host.submit("a", "two") as events:
            kinds = [type(event).__name__ async for event in events]
        assert kinds[-1] == "TurnCompleted"
        await trio.sleep(Session.hibernate_after)
        await trio.testing.wait_all_tasks_blocked()
        assert cell.task is None
        sent = provider.requests[-1].messages
        assert [m.content for m in sent] == ["one", "ok", "two"]
