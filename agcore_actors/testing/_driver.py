"""TrioDriver: one long-lived trio run, driven step by step from synchronous code.

Hypothesis' ``RuleBasedStateMachine`` calls its rules synchronously, while the
actors under test live in a trio run. The driver starts that run in trio's
*guest mode* (:func:`trio.lowlevel.start_guest_run`) on a minimal host loop of
its own: a :class:`queue.SimpleQueue` of the guest's callbacks, which the driver
runs only while a step is in progress. Between steps no callback runs, so no
task of the run executes, and with a :class:`trio.testing.MockClock` virtual
time stands still.

::

    with TrioDriver(clock=virtual_clock()) as driver:
        system = driver.enter(ActorSystem(strict=True))
        ref = driver.run(partial(system.spawn, Counter, name="counter"))
        driver.advance(2.0)                    # two virtual seconds pass
        assert driver.run(ref.ask, Get()) == 0

Only one driver can be open in a thread at a time, and ``trio.run`` cannot be
called in that thread while it is open: trio keeps the guest run installed
as the thread's current run between steps. Always close the driver.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, TypeVar, cast

import attrs
import outcome
import trio
import trio.testing

from ._errors import StepTimeout, TrioRunEnded
from ._time import advance

T = TypeVar("T")

#: Real seconds a step may take before :class:`StepTimeout` is raised.
DEFAULT_TIMEOUT = 30.0


@attrs.define(eq=False)
class _Held:
    """A context manager held open by a task of its own (see ``enter``)."""

    release: trio.Event
    finished: trio.Event


class TrioDriver:
    """Drive one trio run step by step from synchronous code.

    Semantics:

    - The run's main task opens a nursery and waits. Each :meth:`run` starts
      its function as a new task in that nursery, then runs the guest's
      callbacks until the function has returned or raised, and returns its
      result or raises its exception. Other tasks (actors, supervisors,
      background tasks) run during steps as trio schedules them.
    - A step ends in the scheduling batch in which its function finishes:
      tasks already runnable in that batch still run to their next
      checkpoint, and nothing at all runs after it until the next step.
    - Virtual time: with a :class:`trio.testing.MockClock` that autojumps
      (``virtual_clock()``), whenever every task is blocked during a step
      the clock jumps to the next deadline, as in ``trio.run``. Between
      steps it stands still, and it does not jump when the next step
      begins either: a step's task yields once more after its function
      finishes, so the scheduler pass that ends the step never finds the
      run idle (an idle pass is what triggers an autojump). The driver
      checks this and raises RuntimeError if time ever moved between two
      steps. With a real clock, time passes between steps but no task runs.
    - A step is limited to ``timeout`` real seconds (default 30) and raises
      :class:`StepTimeout` when it overruns.
    - A failure outside any step's function (a background task that raises,
      a held context that fails) ends the whole run, as in any trio nursery:
      the step in progress then raises that failure (unwrapped from its
      exception group when it is alone there). Later calls raise
      :class:`TrioRunEnded`.
    - :meth:`close` exits the contexts entered with :meth:`enter` (last
      entered first, each to completion), cancels everything else and runs
      the guest until the run has ended. A driver is a context manager that
      closes on exit.
    """

    def __init__(
        self,
        *,
        clock: trio.abc.Clock | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._clock = clock
        self._mock = clock if isinstance(clock, trio.testing.MockClock) else None
        self.timeout = timeout
        self._queue: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self._outcome: outcome.Outcome[None] | None = None
        self._failure_reported = False
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._held: list[_Held] = []
        self._pumping = False
        self._broken = False
        self._closed = False
        # Virtual time when the host submitted the next step (see _resume).
        self._paused_at: float | None = None
        self._time_moved: str | None = None
        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=self._queue.put,
            done_callback=self._on_done,
            clock=clock,
        )
        self._pump(lambda: self._nursery is not None, "starting the trio run", timeout)

    # -- public API ----------------------------------------------------------------

    @property
    def clock(self) -> trio.abc.Clock | None:
        """The clock the run uses (None: trio's real clock)."""
        return self._clock

    @property
    def closed(self) -> bool:
        return self._closed

    def run(
        self, async_fn: Callable[..., Awaitable[T]], *args: Any, timeout: float | None = None
    ) -> T:
        """Run ``async_fn(*args)`` as a task of the live run; return or raise its outcome.

        ``timeout`` overrides the driver's real-time limit for this step.
        Pass keyword arguments with :func:`functools.partial`.
        """
        self._check_usable()
        box: list[outcome.Outcome[T]] = []
        self._submit(lambda: self._spawn_step(box, async_fn, args))
        self._pump(lambda: bool(box), _describe(async_fn), timeout)
        if self._time_moved is not None:
            raise RuntimeError(self._time_moved)
        if not box or self._is_cancelled(box[0]):
            # The run is ending under the step: its failure is the answer.
            self._pump(lambda: False, "ending the trio run", timeout)
            raise TrioRunEnded(f"the trio run ended during {_describe(async_fn)}")
        return box[0].unwrap()

    def advance(self, seconds: float, *, timeout: float | None = None) -> None:
        """Let ``seconds`` of trio time pass, then settle (see :func:`advance`)."""
        self.run(advance, seconds, timeout=timeout)

    def start_soon(self, async_fn: Callable[..., Awaitable[object]], *args: Any) -> None:
        """Start a background task in the run's nursery; it first runs in the next step.

        If it raises, the run ends (see the class docstring).
        """
        self.run(self._start_soon, async_fn, args)

    def enter(self, cm: AbstractAsyncContextManager[T]) -> T:
        """Enter an async context manager in a task of its own and return its value.

        The context stays entered across steps (trio requires a nursery or
        cancel scope to be entered and exited by one task, hence the task)
        until :meth:`close`. An error while entering is raised here; a
        failure of the context after that ends the run.
        """
        self._check_usable()
        held = _Held(trio.Event(), trio.Event())
        value: T = self.run(self._start_holder, cm, held)
        self._held.append(held)
        return value

    def current_time(self) -> float:
        """The run's current time (virtual with a MockClock); usable between steps."""
        if self._mock is not None:
            return self._mock.current_time()
        return self.run(_current_time)

    def close(self) -> None:
        """Exit held contexts (last first), cancel the rest, wait for the run to end.

        Raises the run's failure if no earlier call has raised it, and
        :class:`StepTimeout` if the run does not end within the time limit.
        """
        if self._closed:
            return
        if trio.lowlevel.in_trio_task() or self._pumping:
            raise RuntimeError("TrioDriver is closed from synchronous code, not from its own run")
        self._closed = True
        while self._held and self._outcome is None and not self._broken:
            self._release(self._held.pop())
        if self._outcome is None:
            self._submit(self._cancel_all)
            self._pump(lambda: False, "ending the trio run", None)
        assert self._outcome is not None
        if isinstance(self._outcome, outcome.Error) and not self._failure_reported:
            self._failure_reported = True
            raise _unwrap(self._outcome.error)

    def __enter__(self) -> TrioDriver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the guest side (runs inside the trio run) ----------------------------------

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            self._token = trio.lowlevel.current_trio_token()
            self._nursery = nursery
            await self._pause()
            await trio.sleep_forever()

    def _spawn_step(
        self,
        box: list[outcome.Outcome[T]],
        async_fn: Callable[..., Awaitable[T]],
        args: tuple[Any, ...],
    ) -> None:
        assert self._nursery is not None
        self._resume()
        self._nursery.start_soon(self._step, box, async_fn, args, name=_describe(async_fn))

    async def _step(
        self,
        box: list[outcome.Outcome[T]],
        async_fn: Callable[..., Awaitable[T]],
        args: tuple[Any, ...],
    ) -> None:
        try:
            result = await async_fn(*args)
        except BaseException as exc:
            box.append(outcome.Error(exc))
            if isinstance(exc, trio.Cancelled):
                raise
        else:
            box.append(outcome.Value(result))
        await self._pause()

    async def _pause(self) -> None:
        """End a step: yield once more after the host has seen the step end.

        The host stops running callbacks after the batch in which the step
        ended. The scheduler pass that follows (computed in that same batch,
        run when the next step begins) finds this task runnable, so it is
        not idle and cannot autojump the clock. The pass after it polls for
        I/O after the host has already submitted the next step, whose wakeup
        is then pending, so it is not idle either.
        """
        await trio.lowlevel.cancel_shielded_checkpoint()

    def _resume(self) -> None:
        """Begin a step (in a callback of the run); check that time stood still.

        The clock may only have moved since the host submitted the step if
        the run autojumped before the step began, which ``_pause`` prevents.
        (A ``clock.jump()`` by the test between steps is fine: it comes
        before the submission.)
        """
        if self._paused_at is not None and self._mock is not None:
            now = self._mock.current_time()
            if now != self._paused_at and self._time_moved is None:
                self._time_moved = (
                    f"TrioDriver bug: virtual time moved from {self._paused_at} to {now} "
                    "between two steps"
                )
        self._paused_at = None

    async def _start_soon(
        self, async_fn: Callable[..., Awaitable[object]], args: tuple[Any, ...]
    ) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(async_fn, *args)

    async def _start_holder(self, cm: AbstractAsyncContextManager[T], held: _Held) -> T:
        assert self._nursery is not None
        value: T = await self._nursery.start(self._hold, cm, held)
        return value

    @staticmethod
    async def _hold(
        cm: AbstractAsyncContextManager[T],
        held: _Held,
        *,
        task_status: trio.TaskStatus[T] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            async with cm as value:
                task_status.started(value)
                await held.release.wait()
        finally:
            held.finished.set()

    def _release(self, held: _Held) -> None:
        """Let the task holding a context exit it; run until it has (host side)."""

        self._submit(held.release.set)
        self._pump(held.finished.is_set, "exiting a held context", None)

    def _cancel_all(self) -> None:
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()

    # -- the host side ---------------------------------------------------------------

    def _on_done(self, result: outcome.Outcome[None]) -> None:
        self._outcome = result

    def _submit(self, fn: Callable[[], object]) -> None:
        assert self._token is not None
        if self._mock is not None:
            self._paused_at = self._mock.current_time()
        self._token.run_sync_soon(fn)

    def _check_usable(self) -> None:
        if trio.lowlevel.in_trio_task() or self._pumping:
            raise RuntimeError("TrioDriver is driven from synchronous code, not from its own run")
        if self._broken:
            raise RuntimeError("a step of this TrioDriver timed out; only close() is allowed")
        if self._outcome is not None:
            self._raise_run_ended()
        if self._closed:
            raise TrioRunEnded("this TrioDriver is closed")

    def _raise_run_ended(self) -> None:
        assert self._outcome is not None
        if isinstance(self._outcome, outcome.Error):
            if not self._failure_reported:
                self._failure_reported = True
                raise _unwrap(self._outcome.error)
            raise TrioRunEnded("the trio run ended with a failure") from self._outcome.error
        raise TrioRunEnded("the trio run has ended")

    def _pump(self, done: Callable[[], bool], what: str, timeout: float | None) -> None:
        """Run the guest's callbacks until ``done()`` or until the run ends.

        When the run has ended (without ``done()``), raises its failure or
        returns if it ended normally.
        """
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        self._pumping = True
        try:
            while not done():
                if self._outcome is not None:
                    if isinstance(self._outcome, outcome.Error):
                        self._failure_reported = True
                        raise _unwrap(self._outcome.error)
                    return
                remaining = deadline - time.monotonic()
                try:
                    if remaining <= 0:
                        raise queue.Empty
                    callback = self._queue.get(timeout=remaining)
                except queue.Empty:
                    self._broken = True
                    raise StepTimeout(what, limit) from None
                callback()
        finally:
            self._pumping = False

    @staticmethod
    def _is_cancelled(result: outcome.Outcome[Any]) -> bool:
        return isinstance(result, outcome.Error) and isinstance(result.error, trio.Cancelled)


async def _current_time() -> float:
    return trio.current_time()


def _describe(fn: Callable[..., object]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"step {name}"


def _unwrap(error: BaseException) -> BaseException:
    """The only exception inside nested one-member groups, else ``error`` itself."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = cast(BaseException, error.exceptions[0])
    return error
