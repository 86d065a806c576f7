"""Telling cancellations from failures in what a task or nursery raised.

A trio nursery wraps what its tasks raise in exception groups, and a
cancellation arrives as :class:`trio.Cancelled`, possibly grouped with other
Cancelled. The runtime must tell the two apart: a cancellation ends an
incarnation without being a crash, and must be re-raised so that trio can
deliver it; anything else is a crash and goes to the supervisor unwrapped.
"""

from __future__ import annotations

import trio


def is_cancellation(exc: BaseException) -> bool:
    """True for a Cancelled, or a group made only of Cancelled."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(is_cancellation(e) for e in exc.exceptions)
    return False


def unwrap_group(exc: BaseException) -> BaseException:
    """The one real error inside nested single-member groups, else ``exc``.

    Cancelled members do not count: a group of one failure and the
    Cancelled it caused in sibling tasks unwraps to that failure.
    """
    while isinstance(exc, BaseExceptionGroup):
        real = [e for e in exc.exceptions if not is_cancellation(e)]
        if len(real) != 1:
            return exc
        exc = real[0]
    return exc


def interrupt_in(exc: BaseException | None) -> BaseException | None:
    """The KeyboardInterrupt or SystemExit in ``exc`` (itself or in a group), else None.

    These end the program, never just an actor: the runtime answers them with
    an ordered shutdown of the whole system instead of a restart.
    """
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = interrupt_in(inner)
            if found is not None:
                return found
    return None
