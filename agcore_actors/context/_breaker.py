"""The summary step's failure breaker, as one small object the Compactor asks.

It holds the breaker's state outside any one Compactor instance:
:func:`~agcore_actors.context.compactor_spec` makes one per child and hands it
to every incarnation, so a restart of the Compactor keeps an open breaker open.
The decisions are the library's one breaker policy
(:class:`~agcore_actors.actor.policy.CircuitBreaker`) with a constant cooldown:
``max_failures`` consecutive failures open it for ``cooldown`` seconds, then one trial
(half-open) closes it on success or re-opens it on failure. Times are trio clock
readings.
"""

from __future__ import annotations

from ..actor.policy import (
    Backoff,
    BreakerState,
    CircuitBreaker,
    breaker_allows,
    breaker_failure,
    breaker_success,
)


class SummaryBreaker:
    """Consecutive summary failures; open for ``cooldown`` seconds from the
    ``max_failures``-th on, then one trial (half-open) that closes or re-opens it.

    Not thread-safe; used from the event loop only.
    """

    def __init__(self, max_failures: int, cooldown: float) -> None:
        self.max_failures = max_failures
        self.cooldown = cooldown
        constant = Backoff(initial=cooldown, multiplier=1.0, cap=cooldown, jitter=0.0)
        self._config = CircuitBreaker(threshold=max_failures, backoff=constant)
        self._state = BreakerState()

    @property
    def consecutive_failures(self) -> int:
        return self._state.failures

    def is_open(self) -> bool:
        """Open or half-open: the last failures have not been answered by a success."""
        return self._state.open_until is not None

    def allows(self, now: float) -> bool:
        """Whether a summary may be tried at ``now`` (closed, or a trial is due)."""
        return breaker_allows(self._state, now)

    def failed(self, now: float) -> None:
        """A summary failed at ``now``."""
        self._state = breaker_failure(self._config, self._state, now)

    def succeeded(self) -> None:
        """A summary succeeded: the breaker closes and the count starts over."""
        self._state = breaker_success(self._config, self._state, 0.0)
