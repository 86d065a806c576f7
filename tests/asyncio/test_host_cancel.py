"""AsyncioHost: cancelling its callers and leaving it, on trio's guest mode.

Whatever cancels a turn from asyncio (the task, a timeout, a dropped or cancelled
stream, leaving the host), every call of the turn is answered and the session's next
turn sees a valid history. Each test is a plain function running its own
``asyncio.run``; the host's turns and errors are in ``test_host``.
"""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agcore_actors.actor import ActorStopped
from agcore_actors.agent import HostConfig
from agcore_actors.agent import messages as am
from agcore_actors.asyncio import AsyncioHost
from agcore_actors.store import SqliteSessions
from tests.asyncio.checks import check_cancelled_turn_then_next, in_asyncio
from tests.asyncio.rig import Model, builder, tool_results

pytestmark = pytest.mark.usefixtures("threads_checked")


async def _cancel_then_next(
    host: AsyncioHost,
    session: str,
    cancel: Callable[[asyncio.Task[Any]], Awaitable[None]],
    *,
    alone: bool = True,
) -> bool:
    """Run "tools 3" in a task, cancel it by ``cancel``; then the next turn must work.
    True if the task was in fact cancelled (not already done)."""
    task = asyncio.create_task(host.run(session, "tools 3"))
    await cancel(task)
    try:
        result = await task
    except asyncio.CancelledError:
        cancelled = True
    else:
        assert result.status == "completed"
        cancelled = False
    # The cancelled turn has ended (committed) before CancelledError came.
    info = await host.ask(session, am.GetSessionInfo())
    assert (info.running_turn, info.queued_turns) == (None, 0)
    if alone:
        assert not (await host.snapshot()).busy
    after = await host.run(session, f"next {session}")
    assert after.status == "completed"
    return cancelled


def test_cancelling_the_asyncio_task_at_every_step_answers_every_call() -> None:
    """Cancel after 0..N loop iterations (each lets the bridge and trio move a step),
    then after real delays spanning the model call and the tool batch."""
    model = Model()
    outcomes: list[bool] = []

    def after_steps(n: int) -> Callable[[asyncio.Task[Any]], Awaitable[None]]:
        async def cancel(task: asyncio.Task[Any]) -> None:
            for _ in range(n):
                await asyncio.sleep(0)
            task.cancel()

        return cancel

    def after_seconds(seconds: float) -> Callable[[asyncio.Task[Any]], Awaitable[None]]:
        async def cancel(task: asyncio.Task[Any]) -> None:
            await asyncio.sleep(seconds)
            task.cancel()

        return cancel

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            points = [after_steps(n) for n in range(40)]
            points += [after_seconds(0.005 * n) for n in range(1, 25)]
            for n, cancel in enumerate(points):
                outcomes.append(await _cancel_then_next(host, f"s{n}", cancel))

    in_asyncio(main)
    assert sum(outcomes) >= 30  # most points fell inside the turn
    for n in range(len(outcomes)):
        check_cancelled_turn_then_next(model, f"s{n}", "tools 3")
    # Some cancellations fell inside the tool batch: calls answered as cancelled.
    cancelled_calls = [
        content
        for request in model.requests
        for content in tool_results(list(request.messages)).values()
        if "slept" not in str(content)
    ]
    assert cancelled_calls


async def _read_until(host: AsyncioHost, session: str, stop_at: int) -> None:
    """Read a "tools 3" turn's events; cancel this task at the ``stop_at``-th."""
    seen = 0
    async for _ in host.submit(session, "tools 3"):
        seen += 1
        if seen == stop_at:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()


def test_cancelling_a_stream_at_every_event_answers_every_call() -> None:
    """A "tools 3" turn streams TurnStarted, 3 ToolCallStarted, 3 ToolCallFinished,
    usage...: the reader is cancelled at each of them in turn."""
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            for stop_at in range(1, 10):
                session = f"e{stop_at}"
                with pytest.raises(asyncio.CancelledError):
                    await asyncio.create_task(_read_until(host, session, stop_at))
                assert not (await host.snapshot()).busy
                assert (await host.run(session, f"next {session}")).status == "completed"
                check_cancelled_turn_then_next(model, session, "tools 3")

    in_asyncio(main)


def test_asyncio_timeout_cancels_the_turn() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.03):
                    await host.run("t", "tools 3")
            assert (await host.run("t", "next t")).status == "completed"
            check_cancelled_turn_then_next(model, "t", "tools 3")

    in_asyncio(main)


# -- shutdown ----------------------------------------------------------------------------


def test_leaving_with_turns_in_flight_drains_and_commits_them(tmp_path: Path) -> None:
    store = SqliteSessions(str(tmp_path / "sessions.db"))
    model = Model()
    results: list[Any] = []

    async def turn(host: AsyncioHost, n: int) -> None:
        try:
            results.append(await host.run(f"s{n}", f"tools {1 + n % 4}"))
        except ActorStopped as exc:
            results.append(exc)

    async def first() -> None:
        config = HostConfig(drain_timeout=0.03)
        async with AsyncioHost(builder(model, store), config) as host:
            tasks = [asyncio.create_task(turn(host, n)) for n in range(12)]
            await asyncio.sleep(0.02)
        # The host has stopped: every caller has its answer.
        assert all(task.done() for task in tasks)
        await asyncio.gather(*tasks)

    in_asyncio(first)
    statuses = {r.status if isinstance(r, am.TurnResult) else "stopped" for r in results}
    assert "cancelled" in statuses and statuses <= {"completed", "cancelled", "stopped"}

    async def second() -> None:
        async with AsyncioHost(builder(model, store)) as host:
            for n in range(12):
                assert (await host.run(f"s{n}", f"next s{n}")).status == "completed"

    in_asyncio(second)
    for n in range(12):
        check_cancelled_turn_then_next(model, f"s{n}", f"tools {1 + n % 4}")


def test_cancelling_the_task_that_holds_the_host_drains_it() -> None:
    """What Ctrl-C does under asyncio.run: the main task is cancelled in the block."""
    model = Model()

    async def main() -> None:
        started = asyncio.Event()
        runs: list[asyncio.Task[Any]] = []

        async def holder() -> None:
            async with AsyncioHost(builder(model), HostConfig(drain_timeout=0.0)) as host:
                runs.append(asyncio.create_task(host.run("s", "tools 3")))
                started.set()
                await asyncio.sleep(3600)

        task = asyncio.create_task(holder())
        await started.wait()
        await asyncio.sleep(0.03)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await runs[0]
        assert result.status == "cancelled"

    in_asyncio(main)


def test_a_stream_dropped_mid_turn_cancels_it_and_the_next_turn_runs() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            for stop_at in (1, 3, 5):
                session = f"d{stop_at}"
                stream = host.submit(session, "tools 3")
                seen = 0
                async for _ in stream:
                    seen += 1
                    if seen == stop_at:
                        break
                del stream  # dropped: its turn is cancelled, nobody waits for it
                gc.collect()
                assert (await host.run(session, f"next {session}")).status == "completed"
                check_cancelled_turn_then_next(model, session, "tools 3")
                if stop_at == 1:  # dropped right after TurnStarted: not all tools ran
                    results = tool_results(model.transcript_before(f"next {session}"))
                    assert sum("slept" in str(r) for r in results.values()) < 3

    in_asyncio(main)


def test_a_reader_that_stops_reading_does_not_hold_up_the_drain() -> None:
    """A turn streams more events than the window while its reader sleeps; leaving the
    host lets the stream run ahead: the turn completes (no drain timeout, no cancel)."""

    async def main() -> None:
        async with AsyncioHost(builder(Model()), HostConfig(drain_timeout=600.0)) as host:
            stream = host.submit("s", "many 500")
            first = await stream.__anext__()
            assert isinstance(first, am.TurnStarted)
            await asyncio.sleep(0.05)  # the trio side waits for this reader now
        rest = [event async for event in stream]
        assert isinstance(rest[-1], am.TurnCompleted)
        assert rest[-1].result.text == "".join(f"{i} " for i in range(500))

    in_asyncio(main)


def test_many_turns_cancelled_at_once_at_random_points() -> None:
    """30 sessions' turns run together; each task is cancelled at its own (seeded) point
    while the others run; then every session's next turn sees a valid history."""
    model = Model()
    rng = random.Random(32)
    delays = [rng.uniform(0.0, 0.1) for _ in range(30)]

    async def one(host: AsyncioHost, n: int) -> bool:
        async def cancel(task: asyncio.Task[Any]) -> None:
            await asyncio.sleep(delays[n])
            task.cancel()

        return await _cancel_then_next(host, f"r{n}", cancel, alone=False)

    async def main() -> list[bool]:
        async with AsyncioHost(builder(model)) as host:
            return list(await asyncio.gather(*(one(host, n) for n in range(30))))

    cancelled = in_asyncio(main)
    assert sum(cancelled) >= 10
    for n in range(30):
        check_cancelled_turn_then_next(model, f"r{n}", "tools 3")
