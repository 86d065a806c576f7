"""A lane: one queue of requests, served in batches by one task against one backend.

A request is queued either with its actor's deferred reply (:meth:`Lane.queue`: the
actor's handler returns at once and the lane completes the reply) or by a task that then
waits for the outcome (:meth:`Lane.submit`). The lane's task takes the queue's head
and every request queued behind it (at most ``max_batch``), runs them all in one
``Backend.run_batch`` (one transaction: in a worker thread for SQLite) and gives each
its own outcome. While it runs, the next batch gathers. A lane whose
backend runs on the event loop (not ``threaded``: in memory) runs a request that finds
nothing queued at once, in its asker's task, as a batch of one: the lane's task could
not be mid-batch then (an inline batch never yields), so the order is the same.

Storage trouble: a transaction that fails with :class:`StoreBusy` or
:class:`StoreUnavailable` gives each of its askers that error and the lane carries on;
a :class:`StoreUnavailable` is reported (the store degraded) until a write
transaction succeeds. Any other failure of a transaction fails its askers with
:class:`StoreStorageError` and ends the lane (the actor crashes).

Cancellation: an asker cancelled while its request is queued withdraws it (it never
runs); once taken, the request runs to the end and its asker's cancellation completes
after that (a deferred reply's ``on_cancel`` answers False; a waiting task's abort
``Abort.FAILED``). The lane's task, cancelled, finishes the batch it runs and stops
before the next: what is still queued stays queued (see :meth:`Lane.drain`). A request run at
once is withdrawn likewise if its asker is already cancelled when it arrives; otherwise it
runs whole, with no checkpoint inside, so a cancellation (which can only be delivered at
a checkpoint) completes after it: never a half batch.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

import attrs
import outcome
import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from ..actor.lowlevel import DeferredReply
from ._backend import Backend
from ._errors import StoreBusy, StoreStorageError, StoreUnavailable

R = TypeVar("R")


@attrs.define(eq=False, slots=True)
class _Request:
    """One queued request: the work, who gets its outcome, whether the lane took it."""

    work: Callable[[], Any]
    write: bool
    asker: Task | None
    reply: DeferredReply | None = None
    taken: bool = False
    withdrawn: bool = False

    def withdraw(self) -> bool:
        """The asker gave up: withdrawn unless already taken (the reply's on_cancel)."""
        if self.taken:
            return False
        self.withdrawn = True
        return True

    def answer(self, result: outcome.Outcome[Any]) -> None:
        # The reply is dropped once given: it refers back to this request (its
        # ``on_cancel``), and a request left in that cycle would wait for the garbage
        # collector, holding its message, envelope and reply until a full collection.
        reply, self.reply = self.reply, None
        if reply is not None:
            reply.complete(result)
        else:
            assert self.asker is not None
            reschedule(self.asker, result)


def _ignore(reason: str | None) -> None:
    pass


class Lane:
    """Requests to one backend, batched (see the module doc)."""

    def __init__(
        self,
        backend: Backend,
        *,
        threaded: bool,
        max_batch: int,
        report: Callable[[str | None], None] = _ignore,
    ) -> None:
        self.backend = backend
        #: Told why the storage is unavailable, and None after each write that succeeds
        #: (the actor's ``set_degraded``; lanes on one store share it).
        self._report = report
        self._threaded = threaded
        self._max_batch = max_batch
        self._queue: collections.deque[_Request] = collections.deque()
        self._wakeup: trio.Event | None = None
        self._room: trio.Event | None = None
        self._limiter = trio.CapacityLimiter(1)
        #: Transactions run and requests answered (for metrics and tests).
        self.batches = 0
        self.answered = 0

    @property
    def threaded(self) -> bool:
        """Whether the backend runs in a worker thread (else inline, on the event loop)."""
        return self._threaded

    def __len__(self) -> int:
        """Requests queued, not taken yet (withdrawn ones count until skipped)."""
        return len(self._queue)

    async def room(self, limit: int) -> None:
        """Wait until fewer than ``limit`` requests are queued."""
        while len(self._queue) >= limit:
            if self._room is None:
                self._room = trio.Event()
            await self._room.wait()

    def queue(self, work: Callable[[], Any], *, write: bool, reply: DeferredReply) -> None:
        """Queue ``work``; its outcome completes ``reply`` (see the module doc)."""
        request = _Request(work, write, None, reply)
        reply.on_cancel = request.withdraw
        self._queue.append(request)
        if self._wakeup is not None:
            self._wakeup.set()

    async def call(self, fn: Callable[[], R]) -> R:
        """Run ``fn`` where the backend runs (its worker thread, or inline)."""
        if self._threaded:
            return await trio.to_thread.run_sync(fn, limiter=self._limiter)
        return fn()

    async def submit(self, work: Callable[[], R], *, write: bool) -> R:
        """Queue ``work`` and wait for its outcome (see the module doc on cancellation)."""
        if not self._threaded and not self._queue:
            # Nothing is waiting and an inline batch never yields, so the lane's task is
            # not mid-batch: run the work here as a batch of one, exactly as that task
            # would take it next, without the two task switches of the hop. An asker
            # already cancelled withdraws it, as it would from the queue; this does not
            # yield otherwise, so the lane stays empty until the batch has run.
            await trio.lowlevel.checkpoint_if_cancelled()
            (result,) = self.backend.run_batch([work], write)
            self.batches += 1
            self.answered += 1
            return cast(R, result.unwrap())
        request = _Request(work, write, current_task())
        self._queue.append(request)
        if self._wakeup is not None:
            self._wakeup.set()

        def abort(_: Any) -> Abort:
            if request.taken:
                return Abort.FAILED  # it is running: wait for the outcome
            request.withdrawn = True
            return Abort.SUCCEEDED

        reply: R = await wait_task_rescheduled(abort)
        return reply

    def _take(self) -> list[_Request]:
        batch: list[_Request] = []
        queue = self._queue
        while queue and len(batch) < self._max_batch:
            request = queue.popleft()
            if not request.withdrawn:
                request.taken = True
                batch.append(request)
            else:
                request.reply = None  # no cycle left behind (see _Request.answer)
        return batch

    async def serve(self) -> NoReturn:
        """Take what is queued, run it in one transaction, answer; for ever."""
        while True:
            await trio.lowlevel.checkpoint_if_cancelled()  # cancelled: stop between batches
            if not self._queue:
                self._wakeup = trio.Event()
                await self._wakeup.wait()
                self._wakeup = None
                if self._threaded:
                    await self._gather()
                continue
            await self._run(self._take())
            if not self._threaded:
                await trio.lowlevel.cancel_shielded_checkpoint()  # let the askers queue more

    async def _gather(self) -> None:
        """Woken from idle: let the requests arriving in the same burst join the first
        batch (one more fsync otherwise). Yields while the queue still grows, at most
        until it holds a full batch; costs a few task switches per idle spell."""
        seen = 0
        while seen < len(self._queue) < self._max_batch:
            seen = len(self._queue)
            await trio.lowlevel.cancel_shielded_checkpoint()

    async def drain(self) -> None:
        """Run what is queued now, batch after batch, until nothing is (for a graceful
        stop, once :meth:`serve` has stopped)."""
        while batch := self._take():
            await self._run(batch)

    async def _run(self, batch: list[_Request]) -> None:
        room = self._room
        if room is not None:
            self._room = None
            room.set()
        write = any(r.write for r in batch)
        run = functools.partial(self.backend.run_batch, [r.work for r in batch], write)
        try:
            # Shielded: the thread cannot be interrupted anyway, and every taken
            # request must get its outcome or its asker would wait for ever.
            with trio.CancelScope(shield=True):
                results = await self.call(run)
        except (StoreBusy, StoreUnavailable) as exc:
            # Rolled back, and the file may serve again: the askers get the error
            # (each its own copy), the lane carries on.
            for request in batch:
                request.answer(outcome.Error(type(exc)(str(exc))))
            if isinstance(exc, StoreUnavailable):
                self._report(f"storage unavailable: {exc}")
            return
        except BaseException as exc:
            # The whole transaction failed: every request of it gets an error, then
            # the lane's failure crashes the actor.
            for request in batch:
                failed = StoreStorageError(f"the transaction of this request failed: {exc}")
                request.answer(outcome.Error(failed))
            raise
        if write:
            self._report(None)
        for request, result in zip(batch, results, strict=True):
            request.answer(result)
        self.batches += 1
        self.answered += len(batch)
