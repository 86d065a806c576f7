"""Trio's guest ticks on the asyncio loop, several in one callback of the loop.

In guest mode trio hands the host one *tick* at a time (one scheduler batch) through
``run_sync_soon_not_threadsafe``; given ``loop.call_soon``, each batch costs a whole
iteration of the asyncio loop (a ``select`` call and its bookkeeping), where ``trio.run``
runs its batches back to back. :class:`Ticks` runs up to ``batch`` ticks that follow each
other in one callback, then yields to the loop: asyncio's own callbacks wait at most that
many trio batches, as trio's tasks wait for asyncio's. Ticks still run one at a time, in
order, on the loop's thread.

A batch also ends as soon as trio has handed asyncio a result (:meth:`Ticks.yield_to_host`):
the asyncio task that gets it runs before trio's next tick, so a caller that answers with
another call finds trio still awake (the portal's job yields once after its outcome) and
trio need not go to its I/O thread and be woken back in between.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable

__all__ = ["TICKS_PER_CALLBACK", "Ticks"]

#: Trio ticks run in one callback of the asyncio loop at most.
TICKS_PER_CALLBACK = 64


class Ticks:
    """Give trio :attr:`soon` as ``run_sync_soon_not_threadsafe`` (it is only called on
    the loop's thread, by a tick) and :meth:`threadsafe` as ``run_sync_soon_threadsafe``;
    call :meth:`start` once trio has queued its first tick (after ``start_guest_run``).

    ``soon`` only queues (no Python call per tick): the tick that queued it runs inside
    :meth:`_drain`, which goes on with the queue, or, for a tick that came back from
    trio's I/O thread, inside :meth:`_run_threadsafe`, which does the same.
    """

    __slots__ = ("_batch", "_loop", "_queue", "_scheduled", "_yield", "soon")

    def __init__(self, loop: asyncio.AbstractEventLoop, batch: int = TICKS_PER_CALLBACK) -> None:
        self._loop = loop
        self._batch = batch
        self._queue: collections.deque[Callable[[], object]] = collections.deque()
        self._scheduled = False
        self._yield = False
        #: Queue a tick; called by a tick (or before :meth:`start`), on the loop's thread.
        self.soon: Callable[[Callable[[], object]], None] = self._queue.append

    def start(self) -> None:
        """Run what :attr:`soon` has queued so far, in a callback of the loop."""
        self._schedule()

    def threadsafe(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the loop's thread (from any thread), then the ticks it queued."""
        self._loop.call_soon_threadsafe(self._run_threadsafe, fn)

    def yield_to_host(self) -> None:
        """End the running batch after the current tick (asyncio has work now)."""
        self._yield = True

    def _schedule(self) -> None:
        if self._queue and not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        self._yield = False
        self._drain(self._batch)

    def _run_threadsafe(self, fn: Callable[[], object]) -> None:
        self._yield = False
        try:
            fn()
        finally:
            self._drain(self._batch - 1)

    def _drain(self, budget: int) -> None:
        queue = self._queue
        try:
            while budget > 0 and queue and not self._yield:
                budget -= 1
                queue.popleft()()
        finally:
            self._schedule()
