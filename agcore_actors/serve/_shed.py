"""Which turns ``serve --http`` admits, and how long a refused client is told to wait:
``Retry-After`` spread by the rate at which the server completes turns while it is full,
so refused clients come back no faster than turns free their places, and never in one
synchronized herd.

Pure policy on plain numbers (no trio, no I/O). The gate asks :func:`full` at a turn
POST's request line, the application asks :func:`refusal` before a turn starts, and the
HTTP server calls :meth:`RetrySpread.refused` for each 429/503 and
:meth:`RetrySpread.completed` for each turn that ends, with the time.

Admission:
    Turns are admitted by the turns in flight, not by connections: the server is full
    while the turns in flight and the turn POSTs let through but not yet decided reach
    ``admitted``. A turn is refused, in this order: 503 ``shutting_down``; 503
    ``too_many_streams`` (an event stream with ``max_streams`` open); 503 ``overloaded``
    (``admitted`` turns in flight); 429 ``session_busy`` (``max_queued`` of the session's
    turns already waiting behind its running one). Anything else is admitted.

Semantics:
    Refused clients are given *retry slots* one ``1 / rate`` apart: the first refusal
    after a quiet spell is told ``floor``, the k-th of a burst about ``floor + k / rate``
    seconds, so about ``rate`` clients come back in any one second (the whole-second
    ``Retry-After`` groups them by second). ``rate`` is the completions per second
    measured over ``window``-second windows in which the server refused someone because
    it was full (so it measures what the server can do, not what was asked of it;
    a window that ran past twice its length, nothing happening, is not measured),
    averaged with half weight per window, starting from ``guess`` (a window in which
    nothing completed halves it: a server that stalls hands out ever longer waits).
    Once every slot up to ``ceiling`` seconds ahead is promised, further refusals are
    told waits spread evenly over the later half of ``[floor, ceiling]`` and promise
    nothing (they will be refused again if it is still full, and get a slot then).
    Slots in the past are forgotten: nothing carries over from one overload to the next
    beyond the measured rate. Every wait is within ``[floor, ceiling]``.
"""

from __future__ import annotations

import math
from typing import Literal

import attrs

__all__ = ["MIN_RATE", "REFUSALS", "Refusal", "RetrySpread", "full", "refusal"]

Refusal = Literal["shutting_down", "too_many_streams", "overloaded", "session_busy"]
#: The HTTP status and message of each refusal.
REFUSALS: dict[Refusal, tuple[int, str]] = {
    "shutting_down": (503, "the server is shutting down"),
    "too_many_streams": (503, "too many open event streams"),
    "overloaded": (503, "too many turns at once; retry later"),
    "session_busy": (429, "the session has too many turns waiting"),
}


def full(in_flight: int, undecided: int, admitted: int) -> bool:
    """No more turns can be admitted: those in flight and those let through but not yet
    decided (in a burst every request line arrives before the first turn starts)."""
    return in_flight + undecided >= admitted


def refusal(
    *,
    closing: bool,
    streaming: bool,
    streams: int,
    max_streams: int,
    in_flight: int,
    admitted: int,
    waiting: int,
    max_queued: int,
) -> Refusal | None:
    """Why a new turn is refused (see Admission in the module docstring), or None: it is
    admitted. ``waiting``: the session's turns admitted and not yet ended, its running
    one included."""
    if closing:
        return "shutting_down"
    if streaming and streams >= max_streams:
        return "too_many_streams"
    if in_flight >= admitted:
        return "overloaded"
    if waiting > max_queued:
        return "session_busy"
    return None


#: The lowest rate used to spread slots (turns per second): a server that completes
#: nothing while full still hands out slots, one per ``1 / MIN_RATE`` seconds.
MIN_RATE = 0.1


@attrs.define
class RetrySpread:
    """See the module docstring."""

    #: Shortest wait, seconds.
    floor: int = 1
    #: Longest wait, seconds.
    ceiling: int = 60
    #: Seconds over which completions are counted for one rate sample.
    window: float = 1.0
    #: Completions per second assumed before any full window was measured.
    guess: float = 10.0
    _measured: float = attrs.field(init=False)
    _done: int = 0
    _refusals: int = 0
    _since: float | None = None
    #: When the next retry slot falls (the last promised one plus ``1 / rate``).
    _next: float = -math.inf
    #: Refusals told to wait past the promised slots, for spreading them.
    _late: int = 0

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.floor <= self.ceiling:
            raise ValueError(f"need 1 <= floor <= ceiling, not {self.floor}, {self.ceiling}")
        if not (self.window > 0 and self.guess > 0):
            raise ValueError(f"need window > 0 and guess > 0, not {self.window}, {self.guess}")
        self._measured = self.guess

    @property
    def rate(self) -> float:
        """The completions per second slots are spread by."""
        return max(MIN_RATE, self._measured)

    def _roll(self, now: float) -> None:
        if self._since is None:
            self._since = now
            return
        elapsed = now - self._since
        if elapsed < self.window:
            return
        # A window in which the server refused someone (it was full): what it completed
        # is what it can do. A longer gap was mostly quiet and measures nothing.
        if self._refusals and elapsed <= 2 * self.window:
            self._measured = (self._measured + self._done / elapsed) / 2
        self._done = self._refusals = 0
        self._since = now

    def refused(self, now: float, *, full: bool = True) -> int:
        """Count a refusal at ``now``; the whole seconds its client should wait.
        ``full``: refused because the server was full (not, say, one busy session)."""
        self._roll(now)
        self._refusals += full
        slot = max(self._next, now + self.floor)
        ahead = slot - now - 1e-9  # (now + floor) - now is not always floor in floats
        if ahead > self.ceiling:
            # Every slot up to the ceiling is promised: the later half, round robin.
            self._late += 1
            low = max(self.floor, self.ceiling - self.ceiling // 2)
            return low + self._late % (self.ceiling - low + 1)
        self._next = slot + 1 / self.rate
        return max(self.floor, min(self.ceiling, math.ceil(ahead)))

    def completed(self, now: float) -> None:
        """Count a turn that ended at ``now``."""
        self._roll(now)
        self._done += 1
