"""The trio side of an embedded host: one run that owns a SessionHost and runs the
calls another loop (an asyncio loop, a caller's thread) sends it.

Semantics:
    :meth:`Portal.main` is the run's main task: it opens the host (its actors, then the
    :class:`~agcore_actors.agent.SessionHost`), reports that it is ready, and keeps it
    open until :meth:`Portal.stop`. Each call from outside is a :class:`Job`: started
    with :meth:`Portal.start` from any thread, it runs as a task of the run and ends with
    one outcome. A job never raises into the run: its outcome, value or error, is handed
    to the caller as it is, so a typed error of the host reaches the caller unchanged.

    The caller learns of a change of its job (an outcome, or an event of a stream)
    through the ``signal`` it gave, a plain callable run *in the run's thread*: in trio's
    guest mode that is the asyncio loop's own thread, so an asyncio face sets a future
    there without crossing threads; a blocking face sets a ``threading.Event``.

    A call from the run's own thread (in guest mode: the asyncio loop's code, which runs
    between trio's ticks) acts on the run at once, through trio's synchronous API, as
    guest mode allows: a job's task is spawned before :meth:`Portal.start` returns, with
    no trip through trio's entry queue. From any other thread it goes through
    :meth:`trio.lowlevel.TrioToken.run_sync_soon`.

Cancellation:
    :meth:`Job.cancel` (any thread) cancels the job's task: what it awaited is cancelled
    with trio's guarantees (a turn is committed, every tool call answered) before the
    job's outcome arrives, so a caller that waits for the outcome after cancelling has
    the same guarantee as a trio caller. A job cancelled before its task started never
    calls the host.

Shutdown:
    :meth:`Portal.stop` (any thread) lets the main task leave the host's ``async with``,
    which drains: turns in flight get the host's ``drain_timeout``, then are cancelled
    and committed; control calls (approve, cancel) still work meanwhile. Streams stop
    waiting for their reader then (the run never blocks on a caller that left). Once the
    host has closed, jobs still running are cancelled and end with
    :class:`~agcore_actors.actor.ActorStopped`, and so does every job started later.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import outcome
import trio
import trio.lowlevel

from ..actor import ActorStopped
from ..agent import SessionHost

__all__ = ["STREAM_WINDOW", "Job", "Portal", "unwrap"]

#: Events a stream may run ahead of its reader before the run waits for it.
STREAM_WINDOW = 64


class Job:
    """One call into the run: its task's cancel scope, its outcome, a stream's events.

    ``signal`` is called in the run's thread after every change (an event put, the
    outcome set). ``items`` and ``outcome`` are read by the caller after a signal.
    """

    __slots__ = (
        "_lock",
        "_portal",
        "_space",
        "cancel_requested",
        "items",
        "outcome",
        "scope",
        "signal",
    )

    def __init__(self, portal: Portal, signal: Callable[[], object]) -> None:
        self._portal = portal
        self.signal = signal
        self.scope = trio.CancelScope()
        self.outcome: outcome.Outcome[Any] | None = None
        self.items: collections.deque[Any] = collections.deque()
        self.cancel_requested = False
        self._space: trio.Event | None = None
        # The reader takes events on another thread in the blocking face.
        self._lock = threading.Lock()

    # -- the caller's side (any thread) --------------------------------------------------

    def cancel(self) -> None:
        """Cancel the job's task (its outcome still arrives, once it has ended)."""
        if self.cancel_requested or self.outcome is not None:
            return
        self.cancel_requested = True
        self._portal.call_soon(self.scope.cancel)

    def take(self) -> Any:
        """The next event of a stream (there must be one); lets a waiting stream go on."""
        with self._lock:
            item = self.items.popleft()
            space = self._space
            if space is not None and len(self.items) <= STREAM_WINDOW // 2:
                self._space = None
            else:
                space = None
        if space is not None:
            self._portal.call_soon(space.set)
        return item

    # -- the run's side ------------------------------------------------------------------

    async def put(self, item: Any) -> None:
        """Hand an event to the reader; wait while it is a window behind (not in a drain)."""
        with self._lock:
            self.items.append(item)
            space = None
            if len(self.items) >= STREAM_WINDOW and not self._portal.stopping:
                space = self._space = trio.Event()
        self.signal()
        if space is not None:
            waiting = self._portal.waiting
            waiting.add(self)
            try:
                await space.wait()
            finally:
                waiting.discard(self)

    def release(self) -> None:
        """Stop waiting for the reader (the run's thread)."""
        with self._lock:
            space, self._space = self._space, None
        if space is not None:
            space.set()

    def finish(self, result: outcome.Outcome[Any]) -> None:
        self.outcome = result
        self.signal()


class Portal:
    """See the module docstring. ``open_host`` opens the host inside the run."""

    def __init__(
        self,
        open_host: Callable[[], AbstractAsyncContextManager[SessionHost]],
        *,
        name: str = "sessions",
    ) -> None:
        self._open_host = open_host
        self.name = name
        self.host: SessionHost | None = None
        self.stopping = False
        self._closed = False
        self._token: trio.lowlevel.TrioToken | None = None
        #: The run's thread while the main task runs (direct calls from there), else None.
        self._thread: int | None = None
        #: The context jobs' tasks start from (the run's, not a caller's).
        self._context = contextvars.Context()
        self._jobs: trio.Nursery | None = None
        self._stop = trio.Event()
        #: Streams waiting for their reader (see ``_release_streams``).
        self.waiting: set[Job] = set()

    # -- the caller's side (any thread) --------------------------------------------------

    def start(
        self,
        fn: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        signal: Callable[[], object],
        *,
        stream: bool = False,
    ) -> Job:
        """Run ``fn(host, *args)`` as a task of the run (``fn(host, job, *args)`` for a
        ``stream``, which puts events in its job); its outcome goes to the job."""
        job = Job(self, signal)
        if stream:
            args = (job, *args)
        if not self.call_soon(functools.partial(self._spawn, job, fn, args)):
            job.outcome = outcome.Error(ActorStopped(self.name, "is closed"))
        return job

    def stop(self) -> None:
        """Leave the host (drain, then stop its actors) and end the run."""
        self.call_soon(self._stop.set)

    def call_soon(self, fn: Callable[[], object]) -> bool:
        """Run ``fn`` in the run's thread soon (now, if called there); False if the run
        has ended."""
        if self._thread is not None and self._thread == threading.get_ident():
            fn()
            return True
        if self._token is None:
            return False
        try:
            self._token.run_sync_soon(fn)
        except trio.RunFinishedError:
            return False
        return True

    # -- the run's side ------------------------------------------------------------------

    async def main(self, ready: Callable[[], object]) -> None:
        """Open the host, call ``ready()``, hold it until :meth:`stop`, close it."""
        self._token = trio.lowlevel.current_trio_token()
        self._context = contextvars.copy_context()
        self._thread = threading.get_ident()
        try:
            async with trio.open_nursery() as jobs:
                self._jobs = jobs
                try:
                    async with self._open_host() as host:
                        self.host = host
                        ready()
                        await self._stop.wait()
                        self._release_streams()
                finally:
                    self._closed = True
                    self.stopping = True
                    jobs.cancel_scope.cancel()  # what outlived the host: a stream not read
        finally:
            self._closed = True
            self._thread = None
            self.host = None

    def _release_streams(self) -> None:
        """From now on no stream waits for its reader: the drain must not wait on one."""
        self.stopping = True
        for job in list(self.waiting):
            job.release()

    def _spawn(self, job: Job, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        if self._closed or self._jobs is None or self.host is None:
            job.finish(outcome.Error(ActorStopped(self.name, "is closed")))
            return
        # Started from the run's context, not the caller's (an asyncio task's, here).
        self._context.run(self._jobs.start_soon, self._run, job, fn, (self.host, *args))

    async def _run(
        self, job: Job, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]
    ) -> None:
        try:
            with job.scope:
                value = await fn(*args)
                job.finish(outcome.Value(value))
                # Stay awake one more scheduling pass: a caller that answers with its next
                # call at once finds the run awake (see the asyncio face's Ticks).
                await trio.lowlevel.cancel_shielded_checkpoint()
                return
            # The job's own scope caught its cancellation: the caller asked for it, and
            # will not read the outcome.
            job.finish(outcome.Value(None))
        except trio.Cancelled:
            # The run is closing under the job.
            job.finish(outcome.Error(ActorStopped(self.name, "stopped during the call")))
            raise
        except Exception as exc:
            job.finish(outcome.Error(exc))
        except BaseException as exc:
            job.finish(outcome.Error(exc))
            raise


def unwrap(error: BaseException) -> BaseException:
    """The only exception inside nested one-member groups (trio's nurseries wrap what
    fails in them), else ``error`` itself: what the faces raise for a failed run."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
