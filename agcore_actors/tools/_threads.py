"""Worker threads for sync tools: a limiter of their own, and a count of the threads
that were abandoned.

A sync tool runs in a worker thread. A thread cannot be interrupted: when its call
times out or is cancelled the thread is *abandoned* and keeps its limiter token until
the function returns. On trio's default limiter (shared with DNS lookups and every
other ``trio.to_thread`` user) a few dozen stuck tools would stop all of those. So
tools get their own :class:`ToolThreads`: ``max_threads`` tokens, and past
``max_abandoned`` abandoned threads still running, new sync calls are refused at once
with :class:`~agcore_actors.tools.ToolThreadsExhausted` instead of queueing behind
threads that may never return.

The count is of abandoned threads *still running*: each leaves it when its function
returns, so the budget is whole again once they have all returned
(``test_abandoned_counts_the_cancelled_threads_still_running_not_a_lifetime_total``).
A thread whose function never returns holds its place for good: sync tools should poll
``ctx.cancelled`` in their loops and return early once it is true, and start child
processes with :func:`~agcore_actors.tools.run_process_sync`, which kills the child's
process group and returns once the call is cancelled. That is what frees an abandoned
thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import trio

from ._errors import ToolThreadsExhausted

T = TypeVar("T")

#: Default limits of the worker threads of sync tools.
DEFAULT_MAX_TOOL_THREADS = 16
DEFAULT_MAX_ABANDONED_THREADS = 8

_DEFAULT: trio.lowlevel.RunVar[ToolThreads] = trio.lowlevel.RunVar("agcore_tool_threads")


@attrs.define(eq=False)
class ToolThreads:
    """The threads sync tools run on (share one among all executors of a process)."""

    #: Threads that may run sync tools at once, abandoned ones included.
    max_threads: int = attrs.field(
        default=DEFAULT_MAX_TOOL_THREADS, validator=attrs.validators.ge(1)
    )
    #: Abandoned threads still running above which new sync calls are refused.
    max_abandoned: int = attrs.field(
        default=DEFAULT_MAX_ABANDONED_THREADS, validator=attrs.validators.ge(1)
    )
    _limiter: trio.CapacityLimiter = attrs.field(init=False)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _abandoned: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self._limiter = trio.CapacityLimiter(self.max_threads)

    @property
    def abandoned(self) -> int:
        """Threads whose call was cancelled or timed out and that are still running."""
        with self._lock:
            return self._abandoned

    @property
    def busy(self) -> int:
        """Threads running now, abandoned ones included."""
        return int(self._limiter.borrowed_tokens)

    async def run_sync(self, tool: str, func: Callable[[], T]) -> T:
        """Run ``func`` in a worker thread; raise :class:`ToolThreadsExhausted` at once
        when too many abandoned threads are still running.

        Cancellation abandons the thread (it keeps running; its token comes back when
        it returns) and counts it until then. A call cancelled before its thread began
        never runs ``func``.
        """
        abandoned = self.abandoned
        if abandoned >= self.max_abandoned:
            raise ToolThreadsExhausted(tool, abandoned)
        lock = self._lock
        state = {"cancelled": False, "running": False}

        def work() -> Any:
            with lock:
                if state["cancelled"]:
                    return None  # abandoned before it began: never run the tool
                state["running"] = True
            try:
                return func()
            finally:
                with lock:
                    state["running"] = False
                    if state["cancelled"]:
                        self._abandoned -= 1

        try:
            result: T = await trio.to_thread.run_sync(
                work, abandon_on_cancel=True, limiter=self._limiter
            )
        except BaseException:
            with lock:
                state["cancelled"] = True
                if state["running"]:
                    self._abandoned += 1
            raise
        return result


def default_tool_threads() -> ToolThreads:
    """The :class:`ToolThreads` of this trio run (made with the defaults on first use)."""
    try:
        return _DEFAULT.get()
    except LookupError:
        threads = ToolThreads()
        _DEFAULT.set(threads)
        return threads
