"""A circuit breaker as frozen data and pure functions (no event loop, no I/O).

Domain-free: the caller decides what a failure and a success are, and passes in its
clock readings. The rules:

- **Closed** (``open_until is None``): every attempt is allowed. Each failure adds one
  to ``failures``; the ``threshold``-th consecutive failure opens the breaker.
- **Open** (``now < open_until``): attempts are refused. The n-th consecutive opening
  lasts ``backoff_delay(n, backoff, unit)`` seconds: the actor :class:`Backoff`, so a
  constant cooldown is ``Backoff(initial=c, multiplier=1, cap=c, jitter=0)``.
- **Half-open** (``now >= open_until``): one trial is allowed. A failure re-opens the
  breaker for the next, longer period; a success closes it.
- **Healthy after**: a success closes the breaker but keeps the count of failures and
  openings until it has lasted ``healthy_after`` seconds. A failure that comes later
  than that starts from a clean history; one that comes sooner continues it. So a
  connection that comes up and dies at once, over and over, still opens the breaker,
  while ``healthy_after = 0`` makes any success clear the history.

The caller runs one trial at a time in the half-open state (a serial actor or a single
probing task does so naturally). Property-tested without trio in
``tests/actor/test_breaker.py``.
"""

from __future__ import annotations

import attrs

from .._validators import non_negative
from ._policy import Backoff, backoff_delay

#: Open periods of the default breaker: 5 s, doubling, at most 5 minutes, no jitter.
DEFAULT_BREAKER_BACKOFF = Backoff(initial=5.0, multiplier=2.0, cap=300.0, jitter=0.0)


def _threshold(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, not {value!r}")


@attrs.frozen
class CircuitBreaker:
    """How a breaker opens, for how long, and when a success wipes the slate."""

    #: Consecutive failures that open the breaker.
    threshold: int = attrs.field(default=3, validator=_threshold)
    #: Length of the n-th consecutive opening (``reset_after`` is not used here).
    backoff: Backoff = DEFAULT_BREAKER_BACKOFF
    #: Seconds a success must last before a later failure starts a fresh count.
    healthy_after: float = attrs.field(default=0.0, validator=non_negative)


@attrs.frozen
class BreakerState:
    """Where a breaker stands; transitions are :func:`breaker_failure` and
    :func:`breaker_success`."""

    #: Consecutive failures (kept across a success until it proves healthy).
    failures: int = 0
    #: Consecutive openings: the backoff attempt number of the last one.
    opens: int = 0
    #: Open until this time, half-open from then on; None when closed.
    open_until: float | None = None
    #: When the last success closed the breaker; None after a failure.
    closed_at: float | None = None


def breaker_failure(
    config: CircuitBreaker, state: BreakerState, now: float, unit: float = 0.0
) -> BreakerState:
    """The state after a failure at ``now``.

    ``unit`` is a random number in [0, 1) for the backoff's jitter.
    """
    if state.closed_at is not None and now - state.closed_at >= config.healthy_after:
        state = BreakerState()
    failures = state.failures + 1
    if failures < config.threshold:
        return BreakerState(failures, state.opens, None, None)
    opens = state.opens + 1
    return BreakerState(failures, opens, now + backoff_delay(opens, config.backoff, unit), None)


def breaker_success(config: CircuitBreaker, state: BreakerState, now: float) -> BreakerState:
    """The state after a success at ``now``: closed; the history of failures is kept
    until the success proves healthy (at once when ``healthy_after`` is 0)."""
    if config.healthy_after == 0:
        return BreakerState(closed_at=now)
    return BreakerState(state.failures, state.opens, None, now)


def breaker_allows(state: BreakerState, now: float) -> bool:
    """Whether an attempt may be made at ``now``: closed, or half-open (one trial)."""
    return state.open_until is None or now >= state.open_until


def breaker_retry_in(state: BreakerState, now: float) -> float | None:
    """Seconds until a trial is allowed (0 when half-open); None when closed."""
    if state.open_until is None:
        return None
    return max(0.0, state.open_until - now)
