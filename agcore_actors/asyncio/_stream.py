"""The asyncio side of one call: a future the trio side sets, and a turn's event stream.

Guest mode runs trio's tasks in the loop's own thread, so :meth:`Waiter.wake`, called
by the trio side (:class:`~agcore_actors._embed.Job`), sets an asyncio future directly:
no thread is crossed on the way back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .._embed import Job
from ..agent import messages as am
from ._ticks import Ticks

__all__ = ["AsyncioTurnStream", "Waiter", "wait_out"]


class Waiter:
    """Wakes the asyncio task waiting for a change of its job (and lets it run before
    trio's next tick: :meth:`Ticks.yield_to_host`)."""

    __slots__ = ("_future", "_loop", "_ticks")

    def __init__(self, loop: asyncio.AbstractEventLoop, ticks: Ticks) -> None:
        self._loop = loop
        self._ticks = ticks
        self._future: asyncio.Future[None] | None = None

    def wake(self) -> None:
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)
            self._ticks.yield_to_host()

    async def wait(self) -> None:
        """Until the next :meth:`wake` (the caller checks its job before waiting)."""
        self._future = self._loop.create_future()
        try:
            await self._future
        finally:
            self._future = None


async def wait_out(job: Job, waiter: Waiter) -> None:
    """Wait until ``job`` has ended, through any number of cancellations (after
    ``job.cancel()``, this is the commit of a cancelled turn: short and bounded)."""
    while job.outcome is None:
        try:
            await waiter.wait()
        except asyncio.CancelledError:
            continue


class AsyncioTurnStream:
    """The events of one turn, from :meth:`AsyncioHost.submit`.

    The turn starts with the first ``__anext__`` (or ``__aenter__``). It ends with one of
    ``TurnCompleted``, ``TurnCancelled``, ``TurnFailed`` as its last event; an error of
    the host (``SessionBusy``, ``ActorStopped``...) is raised by ``__anext__``.
    Cancelling the reading task cancels the turn and waits for its commit. Leaving an
    ``async with`` early (``break``, an error) cancels the turn and waits for its commit;
    a stream dropped without ``async with`` cancels its turn without waiting.
    """

    def __init__(
        self, start: Callable[[tuple[Any, ...]], tuple[Job, Waiter]], args: tuple[Any, ...]
    ) -> None:
        self._start = start
        self._args = args
        self._job: Job | None = None
        self._waiter: Waiter | None = None

    def _begin(self) -> Job:
        if self._job is None:
            self._job, self._waiter = self._start(self._args)
        return self._job

    def __aiter__(self) -> AsyncioTurnStream:
        return self

    async def __anext__(self) -> am.TurnEvent:
        job = self._begin()
        assert self._waiter is not None
        while True:
            if job.items:
                event: am.TurnEvent = job.take()
                return event
            if job.outcome is not None:
                job.outcome.unwrap()
                raise StopAsyncIteration
            try:
                await self._waiter.wait()
            except asyncio.CancelledError:
                job.cancel()
                await wait_out(job, self._waiter)
                raise

    async def aclose(self) -> None:
        """Cancel the turn if it still runs and wait until it has ended (committed)."""
        job, waiter = self._job, self._waiter
        if job is None or waiter is None or job.outcome is not None:
            return
        job.cancel()
        cancelled = False
        while job.outcome is None:
            try:
                await waiter.wait()
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError

    async def __aenter__(self) -> AsyncioTurnStream:
        self._begin()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __del__(self) -> None:
        job = self._job
        if job is not None and job.outcome is None:
            job.cancel()
