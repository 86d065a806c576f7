"""SessionHost under concurrency: callers cancelled at every checkpoint, concurrent first
turns on one cold session, close and eviction racing activation, and session actors that
crash while nobody or somebody reads. After each run: no session actor the host does not
track, the counters back at zero, and the next turn of every session completes."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorCrashed, ActorStopped
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    HostConfig,
    SessionHost,
    SessionParked,
    StoreTurns,
)
from agcore_actors.agent import messages as am
from agcore_actors.agent._bundle import session_name
from agcore_actors.llm import ProviderRegistry, RetryConfig, provider_actor
from agcore_actors.store import InMemorySessions, session_store_spec
from tests.agent.fakes import echo

CRASH = "CRASH"  # a user text whose turn hits a bug in the store (see CrashOn)


class CrashOn(StoreTurns):
    """A store with a bug (not an agcore error) in the begin of a turn whose text is
    CRASH, and after the commit of a turn whose id starts with ``crash`` (the turn is
    stored, then the bug escapes)."""

    async def begin(self, session: str, turn: str, version: int, messages: Any, agent: str) -> int:
        bug_if(messages)
        return await super().begin(session, turn, version, messages, agent)

    async def begin_and_load(self, session: str, *args: Any, **kwargs: Any) -> Any:
        bug_if(args[2])
        return await super().begin_and_load(session, *args, **kwargs)

    async def commit(self, session: str, turn: str, *args: Any, **kwargs: Any) -> int:
        version = await super().commit(session, turn, *args, **kwargs)
        if turn.startswith("crash"):
            raise RuntimeError("a bug in the store's commit")
        return version


def bug_if(messages: list[Any]) -> None:
    if messages and getattr(messages[-1], "content", None) == CRASH:
        raise RuntimeError("a bug in the store's begin")


async def start_host(system: ActorSystem, *, delay: float = 1.0, **config: Any) -> SessionHost:
    """A host whose model echoes after ``delay`` (virtual) seconds, over the real store
    (in memory: SQLite's worker thread and the virtual clock do not mix)."""
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(echo(delay)), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    spec = session_store_spec("store", backend=InMemorySessions(), clock=trio.current_time)
    store = await system.root.start_child(spec)
    bundle = AgentBuilder().provider(llm).store(CrashOn(store)).agent(Agent(name="a")).build()
    return SessionHost(system, bundle, HostConfig(**config))


def session_actors(system: ActorSystem) -> set[str]:
    return {i.name for i in system.snapshot() if i.name.startswith("session:")}


def untracked(system: ActorSystem, host: SessionHost) -> set[str]:
    """Session actors running that the host does not hold."""
    return session_actors(system) - {session_name(s) for s in host.live_sessions}


async def cancelled_after(k: int, call: Callable[[], Awaitable[Any]]) -> None:
    """Run ``call`` and cancel it after ``k`` checkpoints of this task (if still running)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        for _ in range(k):
            await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()


async def settle_and_check(
    system: ActorSystem, host: SessionHost, sessions: list[str], *, turns: bool = True
) -> None:
    """Let starts and stops finish, then: nothing untracked, counters at zero, and (with
    ``turns``) a turn on every session completes."""
    await trio.sleep(5)
    assert untracked(system, host) == set()
    snap = host.snapshot()
    assert (snap.busy, snap.turns_in_flight) == (0, 0)
    for sid in sessions if turns else ():
        assert (await host.run(sid, "again")).status == "completed"
    assert untracked(system, host) == set()


# -- symptom 1: a caller cancelled while its session is activated ---------------------------


async def test_cancelled_activation_leaves_no_untracked_actor(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host = await start_host(system)
    sessions = [f"s{k}" for k in range(100)]
    async with host:
        for k, sid in enumerate(sessions):

            async def turn(sid: str = sid) -> None:
                await host.run(sid, "hello")

            await cancelled_after(k % 50, turn)
        await settle_and_check(system, host, sessions)


@pytest.mark.parametrize("contended", [False, True])
async def test_cancellation_at_every_checkpoint_leaves_the_counters_at_zero(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, contended: bool
) -> None:
    """Cancel run, submit, ask, cancel and approve after k checkpoints, on cold and warm
    sessions, with a cap that makes activations evict (and, ``contended``, while another
    turn holds the only turn slot): busy and turns in flight are back at 0 each time."""
    host = await start_host(
        system, max_sessions=3, delay=0.01, max_turns_in_flight=1 if contended else 256
    )

    async def submit(sid: str) -> None:
        async with host.submit(sid, "hello") as events:
            async for _ in events:
                pass

    calls: list[Callable[[str], Awaitable[Any]]] = [
        lambda sid: host.run(sid, "hello"),
        submit,
        lambda sid: host.ask(sid, am.GetSessionInfo()),
        lambda sid: host.cancel(sid),
        lambda sid: host.approve(sid, "call-1", True),
    ]
    sessions = [f"s{i}" for i in range(5)]
    async with host:
        async with trio.open_nursery() as holder:
            if contended:
                holder.start_soon(host.run, "holder", "hold the slot")
                await trio.testing.wait_all_tasks_blocked()
            held = int(contended)
            for k in range(40):
                for i, call in enumerate(calls):
                    sid = sessions[(k + i) % len(sessions)]

                    async def go(call: Any = call, sid: str = sid) -> None:
                        await call(sid)

                    await cancelled_after(k, go)
                    snap = host.snapshot()
                    assert (snap.busy, snap.turns_in_flight) == (held, held), (k, i)
            holder.cancel_scope.cancel()
        await settle_and_check(system, host, sessions)


# -- symptom 4: concurrent first turns on one cold session ----------------------------------


async def test_concurrent_first_turns_on_one_cold_session_all_complete(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host = await start_host(system)
    results: list[str] = []

    async def turn(sid: str) -> None:
        results.append((await host.run(sid, "hi")).status)

    async with host:
        async with trio.open_nursery() as nursery:
            for i in range(50):
                for _ in range(2):
                    nursery.start_soon(turn, f"pair-{i}")
        assert results == ["completed"] * 100
        assert host.snapshot().activated == 50
        await settle_and_check(system, host, [f"pair-{i}" for i in range(50)])


@pytest.mark.parametrize("seed", range(4))
async def test_colliding_first_turns_with_close_and_eviction_complete_and_orphan_nothing(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, seed: int
) -> None:
    """Many callers over three ids, a live cap of one, a tiny idle TTL, and closes at
    random times: every turn completes (a turn queued behind a close may be refused with
    the closed incarnation's ActorStopped, nothing else), nothing is left untracked."""
    rng = random.Random(seed)
    host = await start_host(system, delay=0.05, max_sessions=1, idle_ttl=0.02, max_queued=64)
    ids = ["x", "y", "z"]
    outcomes: list[str] = []

    async def caller() -> None:
        for _ in range(15):
            await trio.sleep(rng.choice([0, 0, 0.001, 0.01, 0.03, 0.1]))
            sid = rng.choice(ids)
            try:
                outcomes.append((await host.run(sid, "hi")).status)
            except ActorStopped as exc:
                assert exc.actor == session_name(sid)
                outcomes.append("stopped")

    async def closer() -> None:
        for _ in range(20):
            await trio.sleep(rng.choice([0, 0.005, 0.05]))
            await host.close(rng.choice(ids))

    async with host:
        async with trio.open_nursery() as nursery:
            for _ in range(12):
                nursery.start_soon(caller)
            nursery.start_soon(closer)
        assert len(outcomes) == 12 * 15
        assert set(outcomes) <= {"completed", "stopped"}
        assert outcomes.count("completed") >= len(outcomes) * 0.8
        await settle_and_check(system, host, ids)


# -- symptom 3: a session actor that crashes is restarted from the store --------------------


async def read(host: SessionHost, sid: str, text: str, turn: str = "") -> list[am.TurnEvent]:
    async with host.submit(sid, text, turn=turn) as events:
        return [event async for event in events]


async def test_a_session_crashed_in_a_submitted_turn_restarts_from_the_store(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    host = await start_host(system, crash_limit=3)
    async with host:
        assert isinstance((await read(host, "a", "one"))[-1], am.TurnCompleted)
        with pytest.raises((ActorCrashed, RuntimeError)):
            await read(host, "a", CRASH)
        events = await read(host, "a", "two")
        assert isinstance(events[-1], am.TurnCompleted)
        assert events[-1].result.text == "echo: two"
        info = await host.ask("a", am.GetSessionInfo())
        assert info.turns == 2  # the fresh incarnation loaded the stored turns
        snap = host.snapshot()
        assert (snap.crashes, snap.activated, snap.busy, snap.turns_in_flight) == (1, 2, 0, 0)
        assert untracked(system, host) == set()


@pytest.mark.parametrize("via", ["submit", "run"])
async def test_a_session_that_keeps_crashing_in_its_turns_is_parked(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, via: str
) -> None:
    host = await start_host(system, crash_limit=2, crash_window=100.0)

    async def turn(text: str) -> None:
        if via == "submit":
            await read(host, "a", text)
        else:
            await host.run("a", text)

    async with host:
        await turn("one")
        for _ in range(2):
            with pytest.raises((ActorCrashed, RuntimeError)):
                await turn(CRASH)
        with pytest.raises(SessionParked):
            await turn("two")
        assert host.snapshot().crashes == 2 and host.snapshot().parked == 1
        assert (await host.run("b", "other")).status == "completed"
        await host.close("a")
        await turn("three")
        assert untracked(system, host) == set()


async def test_a_crash_no_caller_saw_is_noticed_by_the_next_message(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """The caller is cancelled, so the crash its cancelled turn causes reaches nobody:
    the next submit, run, ask, cancel and approve find the dead incarnation, count its
    crash and start a fresh one (or, for cancel and approve, report no turn)."""
    host = await start_host(system, crash_limit=100)
    async with host:
        await host.run("a", "one")
        for n, next_call in enumerate(["submit", "run", "ask", "cancel", "approve"]):
            # Cancelled while the model answers; the cancelled turn's commit then hits
            # the bug, and the asker gets its own Cancelled, not the crash.
            with trio.move_on_after(0.5):
                await host.run("a", "cancelled", turn=f"crash-{n}")
            await trio.sleep(1)
            assert untracked(system, host) == set()
            if next_call == "submit":
                assert isinstance((await read(host, "a", "next"))[-1], am.TurnCompleted)
            elif next_call == "run":
                assert (await host.run("a", "next")).status == "completed"
            elif next_call == "ask":
                assert (await host.ask("a", am.GetSessionInfo())).turns >= 1
            elif next_call == "cancel":
                assert await host.cancel("a") is False
            else:
                assert await host.approve("a", "call-1", True) is False
            assert host.snapshot().crashes == n + 1
        assert (await host.run("a", "last")).status == "completed"
        assert host.snapshot().crashes == 5
        assert untracked(system, host) == set()


# -- shutdown racing activation ------------------------------------------------------------


async def test_leaving_the_host_while_sessions_start_leaves_nothing_live(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """The host is left k checkpoints after 20 cold sessions were asked for a turn: each
    caller's turn ran (and was committed) or was refused, and nothing stays live."""
    for k in range(0, 40, 3):
        host = await start_host(system, drain_timeout=5.0)
        outcomes: list[str] = []

        async def turn(sid: str, host: SessionHost = host, outcomes: list[str] = outcomes) -> None:
            try:
                outcomes.append((await host.run(sid, "hi")).status)
            except ActorStopped:
                outcomes.append("refused")

        async with trio.open_nursery() as nursery:
            async with host:
                for i in range(20):
                    nursery.start_soon(turn, f"s{i}")
                for _ in range(k):
                    await trio.lowlevel.checkpoint()
            assert host.live_sessions == [], k
            assert session_actors(system) == set(), k
        assert len(outcomes) == 20 and set(outcomes) <= {"completed", "cancelled", "refused"}
        await system.stop("llm")
        await system.stop("store")
