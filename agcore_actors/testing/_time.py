"""Helpers for tests that run in trio's virtual time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio
import trio.testing


def virtual_clock(autojump_threshold: float = 0.0) -> trio.testing.MockClock:
    """A :class:`trio.testing.MockClock` that stands still except for jumps.

    With the default threshold 0, as soon as every task is blocked the clock
    jumps to the next pending deadline, so ``await trio.sleep(3600)`` returns
    at once with ``trio.current_time()`` one hour later. Pass it to
    ``trio.run(..., clock=...)``, to :class:`TrioDriver`, or use pytest-trio's
    ``autojump_clock`` fixture, which is the same clock.
    """
    return trio.testing.MockClock(autojump_threshold=autojump_threshold)


async def settle() -> None:
    """Return once every other task is blocked, without advancing the clock.

    After a message that makes actors crash, restart or reply, ``settle()``
    lets all of that happen that can happen *now*: anything waiting on a
    later deadline (a restart backoff, a timeout) stays pending. Never
    returns while another task keeps running without blocking.
    """
    await trio.testing.wait_all_tasks_blocked()


async def advance(seconds: float) -> None:
    """Let ``seconds`` of trio time pass, then :func:`settle`.

    On an autojumping clock this jumps from deadline to deadline, so every
    timer due within the interval fires at its own time, in order; timers
    due exactly at the end fire too, before this returns.
    """
    await trio.sleep(seconds)
    await settle()


class Elapsed:
    """Trio time measured by :func:`elapsed`; ``seconds`` is final once the block ends."""

    __slots__ = ("end", "start")

    def __init__(self, start: float) -> None:
        self.start = start
        self.end: float | None = None

    @property
    def seconds(self) -> float:
        """Time elapsed since the block began (until it ended, if it has)."""
        end = trio.current_time() if self.end is None else self.end
        return end - self.start


@contextmanager
def elapsed() -> Iterator[Elapsed]:
    """Measure how much trio time (virtual under a MockClock) a block takes.

    ::

        with elapsed() as took:
            await ref.ask(Sleep(2.0))
        assert took.seconds == 2.0
    """
    watch = Elapsed(trio.current_time())
    try:
        yield watch
    finally:
        watch.end = trio.current_time()
