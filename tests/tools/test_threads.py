"""Sync tools run on worker threads of their own: stuck ones never starve trio's
default limiter, abandoned ones are counted, and past a cap new sync calls are refused."""

from __future__ import annotations

import functools
import random
import threading
from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.tools import (
    ExecuteTools,
    ToolCall,
    ToolExecutor,
    ToolRegistry,
    ToolResult,
    ToolStatus,
    ToolThreads,
    function_tool,
)


async def test_stuck_sync_tools_never_starve_other_thread_users(system: ActorSystem) -> None:
    release = threading.Event()

    @function_tool(timeout=0.2)
    def stuck() -> str:
        release.wait(30)  # ignores ctx.cancelled: its thread is abandoned on timeout
        return "late"

    ref = await system.spawn(lambda: ToolExecutor(ToolRegistry([stuck])), name="tools")
    try:
        calls = [ToolCall(id=f"c{i}", name="stuck") for i in range(45)]
        reply = await ref.ask(ExecuteTools(batch_id="b", calls=calls))
        assert {r.status for r in reply.results} == {ToolStatus.TIMEOUT}
        # DNS lookups and every other user of trio's default thread limiter still run.
        with trio.fail_after(5):
            assert await trio.to_thread.run_sync(lambda: 42) == 42
    finally:
        release.set()


async def test_sync_calls_are_refused_while_too_many_abandoned_threads_run(
    system: ActorSystem,
) -> None:
    release = threading.Event()

    @function_tool(timeout=0.2)
    def stuck() -> str:
        release.wait(30)
        return "late"

    @function_tool
    def quick() -> str:
        return "quick"

    @function_tool
    async def native() -> str:
        return "native"

    threads = ToolThreads(max_threads=4, max_abandoned=2)
    registry = ToolRegistry([stuck, quick, native])
    ref = await system.spawn(lambda: ToolExecutor(registry, threads=threads), name="tools")

    async def run(*names: str) -> list[ToolResult]:
        calls = [ToolCall(id=f"c{i}", name=n) for i, n in enumerate(names)]
        return (await ref.ask(ExecuteTools(batch_id="b", calls=calls))).results

    try:
        timed_out = await run("stuck", "stuck", "stuck")
        assert [r.status for r in timed_out] == [ToolStatus.TIMEOUT] * 3
        assert threads.abandoned == 3 and threads.busy == 3
        refused, native_ok = await run("quick", "native")
        assert refused.status is ToolStatus.ERROR and not refused.recoverable
        assert "3 worker threads" in refused.content and "ctx.cancelled" in refused.content
        assert native_ok.content == "native"  # async tools are not affected
    finally:
        release.set()
    with trio.fail_after(5):
        # Polling: the threads end in the OS, with no trio event to wait on.
        while threads.abandoned or threads.busy:  # noqa: ASYNC110
            await trio.sleep(0.01)
    (again,) = await run("quick")
    assert again.content == "quick"


async def test_a_call_cancelled_before_its_thread_starts_never_runs(system: ActorSystem) -> None:
    release = threading.Event()
    ran: list[str] = []

    @function_tool(timeout=0.2)
    def hold() -> str:
        release.wait(30)
        return "held"

    @function_tool(timeout=0.2)
    def queued() -> str:
        ran.append("queued")
        return "ran"

    threads = ToolThreads(max_threads=1, max_abandoned=5)
    registry = ToolRegistry([hold, queued])
    ref = await system.spawn(lambda: ToolExecutor(registry, threads=threads), name="tools")
    try:
        (a,) = (
            await ref.ask(ExecuteTools(batch_id="a", calls=[ToolCall(id="a", name="hold")]))
        ).results
        assert a.status is ToolStatus.TIMEOUT and threads.abandoned == 1  # it keeps the thread
        later = ExecuteTools(batch_id="b", calls=[ToolCall(id="b", name="queued")])
        (b,) = (await ref.ask(later)).results  # waits for a thread until its timeout
        assert b.status is ToolStatus.TIMEOUT
        assert threads.abandoned == 1  # it never had a thread
    finally:
        release.set()
    with trio.fail_after(5):
        while threads.busy:  # noqa: ASYNC110 (threads end in the OS)
            await trio.sleep(0.01)
    assert ran == []


@pytest.mark.parametrize("kwargs", [{"max_threads": 0}, {"max_abandoned": 0}])
def test_bad_thread_limits_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ToolThreads(**kwargs)


@pytest.mark.parametrize("seed", range(6))
async def test_abandoned_counts_the_cancelled_threads_still_running_not_a_lifetime_total(
    seed: int,
) -> None:
    """Calls are cancelled and their threads released in a random order (a release may
    race its call's cancellation): once each step settles, ``abandoned`` is the number of
    cancelled calls whose thread still runs, and every thread's token comes back."""
    rng = random.Random(seed)
    size = 10
    threads = ToolThreads(max_threads=size, max_abandoned=size)
    gates = [threading.Event() for _ in range(size)]
    started = [threading.Event() for _ in range(size)]
    scopes = [trio.CancelScope() for _ in range(size)]

    def work(i: int) -> int:
        started[i].set()
        gates[i].wait(30)
        return i

    async def call(i: int) -> None:
        with scopes[i]:
            await threads.run_sync("t", functools.partial(work, i))

    async def settles(expected: int) -> None:
        with trio.fail_after(5):
            while threads.abandoned != expected:  # noqa: ASYNC110 (threads end in the OS)
                await trio.sleep(0.005)

    cancelled: set[int] = set()
    released: set[int] = set()
    async with trio.open_nursery() as nursery:
        for i in range(size):
            nursery.start_soon(call, i)
        with trio.fail_after(5):
            while not all(s.is_set() for s in started):  # noqa: ASYNC110 (threads start in the OS)
                await trio.sleep(0.005)
        steps = [("cancel", i) for i in range(size)] + [("release", i) for i in range(size)]
        rng.shuffle(steps)
        for op, i in steps:
            if op == "cancel":
                scopes[i].cancel()
                cancelled.add(i)
            else:
                gates[i].set()
                released.add(i)
            if rng.random() < 0.5:  # sometimes let the next step race this one
                await settles(len(cancelled - released))
        await settles(0)
    with trio.fail_after(5):
        while threads.busy:  # noqa: ASYNC110 (threads end in the OS)
            await trio.sleep(0.005)
