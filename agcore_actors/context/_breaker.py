"""The summary step's failure breaker, as one small object the Compactor asks.

It holds the breaker's state outside any one Compactor instance:
:func:`~agcore_actors.context.compactor_spec` makes one per child and hands it
to every incarnation, so a restart of the Compactor keeps an open breaker open.
The decisions are the pure functions of ``_policy`` (:func:`allows`,
:func:`record_failure`, :func:`record_success`); times are trio clock readings.
"""

from __future__ import annotations

from ._policy import Breaker, allows, record_failure, record_success


class SummaryBreaker:
    """Consecutive summary failures; open for ``cooldown`` seconds from the
    ``max_failures``-th on, then one trial (half-open) that closes or re-opens it.

    Not thread-safe; used from the event loop only.
    """

    def __init__(self, max_failures: int, cooldown: float) -> None:
        self.max_failures = max_failures
        self.cooldown = cooldown
        self._state = Breaker()

    @property
    def consecutive_failures(self) -> int:
        return self._state.consecutive_failures

    def is_open(self) -> bool:
        return self._state.is_open()

    def allows(self, now: float) -> bool:
        """Whether a summary may be tried at ``now`` (closed, or a trial is due)."""
        return allows(self._state, now, self.cooldown)

    def failed(self, now: float) -> None:
        """A summary failed at ``now``."""
        self._state = record_failure(self._state, now, self.max_failures)

    def succeeded(self) -> None:
        """A summary succeeded: the breaker closes."""
        self._state = record_success(self._state)
