"""Ticks: trio's guest ticks run in bounded batches on the asyncio loop, and a batch ends
once trio has handed asyncio something to do."""

from __future__ import annotations

import asyncio
import functools
import threading

from agcore_actors.asyncio._ticks import Ticks


def _run(batch: int, yield_at: set[int]) -> list[str]:
    """30 trio ticks (each schedules the next) against 30 asyncio callbacks (each
    schedules the next); the order in which they ran."""
    loop = asyncio.new_event_loop()
    ticks = Ticks(loop, batch=batch)
    log: list[str] = []

    def tick(n: int) -> None:
        log.append(f"t{n}")
        if n in yield_at:
            ticks.yield_to_host()
        if n < 29:
            ticks.soon(functools.partial(tick, n + 1))

    def host(n: int) -> None:
        log.append("a")
        if n < 29:
            loop.call_soon(host, n + 1)

    try:
        loop.call_soon(host, 0)
        ticks.soon(functools.partial(tick, 0))
        ticks.start()
        loop.run_until_complete(asyncio.sleep(0.01))
    finally:
        loop.close()
    return log


def _runs_of_ticks(log: list[str]) -> list[int]:
    runs, current = [], 0
    for entry in log:
        if entry == "a":
            if current:
                runs.append(current)
            current = 0
        else:
            current += 1
    return [*runs, current] if current else runs


def test_ticks_run_in_order_in_batches_of_at_most_the_bound() -> None:
    log = _run(batch=4, yield_at=set())
    assert [e for e in log if e != "a"] == [f"t{n}" for n in range(30)]
    assert log.count("a") == 30
    runs = _runs_of_ticks(log)
    assert max(runs) == 4
    assert sum(runs) == 30


def test_a_batch_ends_after_the_tick_that_handed_asyncio_work() -> None:
    log = _run(batch=16, yield_at={2, 9})
    for n in (2, 9):
        assert log[log.index(f"t{n}") + 1] == "a"
    assert max(_runs_of_ticks(log)) <= 16


def test_a_tick_from_another_thread_runs_on_the_loop_with_the_ticks_it_queues() -> None:
    """trio's I/O thread hands a tick back through ``threadsafe``; the ticks that one
    queues run after it, on the loop's thread, in bounded batches."""
    loop = asyncio.new_event_loop()
    ticks = Ticks(loop, batch=4)
    ran: list[tuple[int, bool]] = []
    finished = asyncio.Event()

    def tick(n: int) -> None:
        ran.append((n, threading.current_thread() is threading.main_thread()))
        if n < 9:
            ticks.soon(functools.partial(tick, n + 1))
        else:
            finished.set()

    async def main() -> None:
        worker = threading.Thread(target=ticks.threadsafe, args=(functools.partial(tick, 0),))
        worker.start()
        worker.join()
        await asyncio.wait_for(finished.wait(), 5)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert ran == [(n, True) for n in range(10)]
