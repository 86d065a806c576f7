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
TICKS_PER_CALLBACK = 16


class Ticks:
    """``soon`` is trio's ``run_sync_soon_not_threadsafe`` (called on the loop's thread)."""

    __slots__ = ("_batch", "_loop", "_queue", "_scheduled", "_yield")

    def __init__(self, loop: asyncio.AbstractEventLoop, batch: int = TICKS_PER_CALLBACK) -> None:
        self._loop = loop
        self._batch = batch
        self._queue: collections.deque[Callable[[], object]] = collections.deque()
        self._scheduled = False
        self._yield = False

    def yield_to_host(self) -> None:
        """End the running batch after the current tick (asyncio has work now)."""
        self._yield = True

    def soon(self, fn: Callable[[], object]) -> None:
        self._queue.append(fn)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        queue = self._queue
        self._yield = False
        try:
            for _ in range(self._batch):
                if not queue or self._yield:
                    break
                queue.popleft()()
        finally:
            if queue:
                self._loop.call_soon(self._run)
            else:
                self._scheduled = False
