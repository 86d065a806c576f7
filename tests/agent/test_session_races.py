"""A session stays in step with its store whatever cancels a turn: a caller cancelled
at any checkpoint or at a random time (during the begin, the model call, the tools, a
child session, the commit), a reader leaving the stream, a begin applied whose reply
the cancelled caller never got. Once the cancellation completes no stored session (child
sessions included) has an open turn; the next turn of every session completes; every
stored transcript is valid. Both stores, many sessions at once."""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest
import trio
import trio.testing

from agcore_actors.agent import Agent
from agcore_actors.agent import messages as am
from agcore_actors.store import messages as sm
from tests.agent.races import (
    SlowBeginReplies,
    assert_consistent,
    cancelled_after,
    delegating_model,
    host_on,
    session_rows,
)
from tests.agent.stores import stored

# -- symptom 2: a cancelled begin ------------------------------------------------------------


async def test_a_turn_cancelled_at_any_checkpoint_leaves_every_session_able_to_run(
    backend: str, clock: object, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(40)]
    async with host_on(backend, tmp_path) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")  # live, at version 2
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(cancelled_after, k, functools.partial(host.run, sid, "x"))
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


async def test_a_reader_leaving_the_stream_at_any_checkpoint_leaves_every_session_able_to_run(
    backend: str, clock: object, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(40)]

    async def read(sid: str) -> None:
        async with host.submit(sid, "x") as events:
            async for _ in events:
                pass

    async with host_on(backend, tmp_path) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(cancelled_after, k, functools.partial(read, sid))
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


async def test_a_cancelled_first_turn_of_an_idle_session_leaves_it_able_to_run(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # An idle session's turn begins and reloads its tail in one write (begin_and_load).
    sessions = [f"s{k}" for k in range(30)]
    async with host_on("memory", tmp_path) as (host, store, _):
        for sid in sessions:
            await host.run(sid, "warm")
        await trio.sleep(1)  # every session idle: its tail dropped
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(cancelled_after, k, functools.partial(host.run, sid, "x"))
        await assert_consistent(host, store, sessions)


# -- cancellation at random moments, and what is stored right after it --------------------------


@pytest.mark.parametrize("seed", range(3))
async def test_turns_cancelled_at_random_moments_are_closed_before_the_cancellation_completes(
    seed: int, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    sessions = [f"s{k}" for k in range(30)]
    async with host_on("memory", tmp_path) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")

        async def cut(sid: str) -> None:
            for n in range(3):
                with trio.move_on_after(rng.uniform(0, 0.05)):
                    if rng.random() < 0.5:
                        await host.run(sid, f"x{n}")
                    else:
                        async with host.submit(sid, f"x{n}") as events:
                            async for _ in events:
                                pass

        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(cut, sid)
        await trio.testing.wait_all_tasks_blocked()
        for sid in sessions:  # closed before the next turn: nothing left to repair
            snapshot = await stored(store, sid)
            assert snapshot is not None and snapshot.record.open_turn is None, sid
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


# -- child sessions, and begins whose reply comes late ------------------------------------------


async def test_a_turn_cancelled_while_its_child_session_runs_leaves_no_open_turn_anywhere(
    backend: str, clock: object, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(100)]
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    async with host_on(backend, tmp_path, model=delegating_model(), agents=(lead, researcher)) as (
        host,
        store,
        system,
    ):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")
        rng = random.Random(0)
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                run = functools.partial(host.run, sid, "x")
                if backend == "memory":
                    # every phase: the lead's model call ends at 0.01 s, the child's at 0.02 s
                    nursery.start_soon(cancelled_after, k % 10, run, 0.01 * (k // 10))
                else:  # real time: anywhere in the turn (about 40 ms on SQLite)
                    nursery.start_soon(cancelled_after, 0, run, rng.uniform(0, 0.04))
        running: sm.SessionPage = await store.ask(sm.ListSessions(status="running"))
        assert [r.id for r in running.sessions] == []
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


@pytest.mark.parametrize("child", [False, True])
async def test_a_turn_cancelled_after_its_begin_was_applied_but_before_the_reply_is_closed(
    child: bool, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    async with host_on(
        "memory",
        tmp_path,
        model=delegating_model(),
        agents=(lead, researcher),
        turns=functools.partial(SlowBeginReplies, child=child),
    ) as (host, store, system):
        await host.run("s", "warm")
        with trio.move_on_after(0.5):
            await host.run("s", "x")
        running: sm.SessionPage = await store.ask(sm.ListSessions(status="running"))
        assert [r.id for r in running.sessions] == []
        await assert_consistent(host, store, ["s"])
        assert session_rows(system) == {"session:s": 0}


# -- control messages racing a turn's begin --------------------------------------------------


async def test_session_info_asked_while_an_idle_sessions_turn_begins_never_breaks_the_turn(
    backend: str, clock: object, tmp_path: Path
) -> None:
    # An idle session holds no usage figure; GetSessionInfo reads the stored one. Read
    # while the turn's begin is in flight, it must not close that turn as interrupted.
    sessions = [f"s{k}" for k in range(40)]
    async with host_on(backend, tmp_path) as (host, store, system):
        for sid in sessions:
            await host.run(sid, "warm")
        await trio.sleep(1)  # every session idle: its tail and usage dropped
        results: dict[str, am.TurnResult] = {}
        infos: dict[str, am.SessionInfo] = {}

        async def turn(sid: str) -> None:
            results[sid] = await host.run(sid, "x")

        async def info(sid: str, checkpoints: int) -> None:
            for _ in range(checkpoints):
                await trio.lowlevel.checkpoint()
            infos[sid] = await host.ask(sid, am.GetSessionInfo())

        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(turn, sid)
                nursery.start_soon(info, sid, k)
        assert {sid: r.status for sid, r in results.items()} == dict.fromkeys(sessions, "completed")
        assert all(i.usage.input_tokens > 0 for i in infos.values())
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}
