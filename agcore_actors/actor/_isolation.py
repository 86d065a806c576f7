"""Isolating a child that keeps crashing, as frozen data and pure functions (no event
loop, no I/O).

An OTP supervisor counts every crash of every child against one restart intensity,
so one shared actor with a bug that fires on every request (a provider, a store)
uses it up in a second and takes its supervisor, and every sibling, down with it.
A child whose :class:`~agcore_actors.actor.ChildSpec` sets ``isolate`` (a
:class:`CircuitBreaker`) is treated instead like an MCP server behind its breaker:

- its crashes (and failed restarts) go to its breaker, **never** to the intensity
  window: it cannot make its supervisor give up;
- below the breaker's ``threshold`` of crashes in a row it is restarted as usual,
  after the supervisor's backoff;
- the ``threshold``-th crash *parks* it until the breaker's open period ends: every
  request queued or sent meanwhile fails at once with
  :class:`~agcore_actors.actor.ActorParked`, which says when to try again;
- then it is started again (one trial). A crash of the trial parks it again, for the
  next, longer period; a start that then lasts ``healthy_after`` seconds without a
  crash clears the history.

A start counts as the breaker's success: so an actor that starts fine and crashes on
its first request, over and over, still opens it (a crash within ``healthy_after`` of
the last start continues the count). Property-tested against an independent model in
``tests/actor/test_isolation.py``.
"""

from __future__ import annotations

from ._breaker import BreakerState, CircuitBreaker, breaker_failure, breaker_success
from ._policy import Backoff

#: Parks of the default isolation: 5 s, doubling, at most 5 minutes, with jitter so
#: that parked siblings are not tried in lock-step.
DEFAULT_ISOLATION_BACKOFF = Backoff(initial=5.0, multiplier=2.0, cap=300.0, jitter=0.1)

#: The isolation the shared actors use: parked at the 3rd crash in a row, each within
#: 30 s of the start before it.
DEFAULT_ISOLATION = CircuitBreaker(
    threshold=3, backoff=DEFAULT_ISOLATION_BACKOFF, healthy_after=30.0
)


def isolated_crash(
    isolate: CircuitBreaker, state: BreakerState, now: float, unit: float = 0.0
) -> tuple[BreakerState, float | None]:
    """An isolated child crashed (or failed to start) at ``now``: its new breaker state,
    and until when it is parked (None: restart it after the usual backoff).

    ``unit`` is a random number in [0, 1) for the park's jitter.
    """
    state = breaker_failure(isolate, state, now, unit)
    return state, state.open_until


def isolated_start(isolate: CircuitBreaker, state: BreakerState, now: float) -> BreakerState:
    """An isolated child finished starting at ``now``: its new breaker state."""
    return breaker_success(isolate, state, now)
