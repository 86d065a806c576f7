"""Supervision policy as data and pure functions (no event loop, no I/O).

The supervisor actor applies these; tests check them with hypothesis alone.
The rules are Erlang/OTP's:

- **Restart type** of a child: ``PERMANENT`` children are always restarted,
  ``TRANSIENT`` ones only after an abnormal exit (a crash), ``TEMPORARY``
  ones never, not even when a sibling's failure stops them.
- **Strategy**: which children a failure restarts — only the failed one
  (``ONE_FOR_ONE``), all (``ONE_FOR_ALL``), or the failed one and every child
  started after it (``REST_FOR_ONE``). Others are stopped in reverse start
  order, then all are started again in start order.
- **Intensity**: more than ``max_restarts`` restarts within ``period`` seconds
  make the supervisor give up: it stops every child and fails itself, and
  its own parent decides what happens next.
- **Backoff** (our addition to OTP): the n-th consecutive restart of a child
  waits ``min(cap, initial * multiplier**(n-1))`` seconds, stretched by up to
  ``jitter`` of itself at random so that siblings do not restart in
  lock-step. A child that ran for ``reset_after`` seconds without failing
  starts again from n = 1.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Sequence

import attrs


class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


class Restart(enum.Enum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, not {value!r}")


def _non_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be >= 0, not {value!r}")


@attrs.frozen
class Intensity:
    """Give up after more than ``max_restarts`` restarts within ``period`` s."""

    max_restarts: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    period: float = attrs.field(default=5.0, validator=_positive)


@attrs.frozen
class Backoff:
    """Delay before a restart; see the module docstring for the formula."""

    initial: float = attrs.field(default=0.1, validator=_non_negative)
    multiplier: float = attrs.field(default=2.0, validator=_positive)
    cap: float = attrs.field(default=10.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.1, validator=_non_negative)
    reset_after: float = attrs.field(default=30.0, validator=_non_negative)

    def __attrs_post_init__(self) -> None:
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be >= 1, not {self.multiplier!r}")
        if self.jitter > 1:
            raise ValueError(f"jitter must be <= 1, not {self.jitter!r}")


#: The defaults, shared (the classes are frozen).
DEFAULT_INTENSITY = Intensity()
DEFAULT_BACKOFF = Backoff()

#: A backoff that restarts at once, as OTP itself does.
NO_BACKOFF = Backoff(initial=0.0, cap=0.0, jitter=0.0)


def should_restart(restart: Restart, crashed: bool) -> bool:
    """Whether a child that exited by itself is restarted."""
    if restart is Restart.PERMANENT:
        return True
    if restart is Restart.TRANSIENT:
        return crashed
    return False


def restart_set(strategy: Strategy, order: Sequence[str], failed: str) -> list[str]:
    """The children a failure of ``failed`` restarts, in start order.

    ``order`` lists the current children in start order and must contain
    ``failed``. Temporary children in the result are stopped, not restarted:
    filter them with :func:`should_restart_sibling`.
    """
    if strategy is Strategy.ONE_FOR_ONE:
        return [failed]
    if strategy is Strategy.ONE_FOR_ALL:
        return list(order)
    index = order.index(failed)
    return list(order[index:])


def should_restart_sibling(restart: Restart) -> bool:
    """Whether a child stopped because of a sibling's failure starts again."""
    return restart is not Restart.TEMPORARY


def record_restart(
    history: Sequence[float], now: float, intensity: Intensity
) -> tuple[tuple[float, ...], bool]:
    """Add a restart at ``now``; return the new window and whether it overflowed.

    ``history`` holds the times of earlier restarts. Restarts older than
    ``period`` seconds before ``now`` fall out of the window; one exactly
    ``period`` old stays in it, as in OTP. The window overflows when it then
    holds more than ``max_restarts`` restarts.
    """
    horizon = now - intensity.period
    # ``>=``: a restart exactly one period old is not older than the period
    # (OTP's supervisor:add_restart keeps R >= Now - Period).
    window = (*(t for t in history if t >= horizon), now)
    return window, len(window) > intensity.max_restarts


class RestartWindow:
    """The restarts within the last ``period``, recorded one at a time.

    The same rule as :func:`record_restart`, kept as a queue: recording a
    restart looks only at the oldest ones still in the window, so it costs the
    same however many restarts the window holds (amortized O(1)).
    """

    __slots__ = ("_intensity", "_times")

    def __init__(self, intensity: Intensity) -> None:
        self._intensity = intensity
        self._times: deque[float] = deque()

    def record(self, now: float) -> bool:
        """Add a restart at ``now``; True if the window now holds too many."""
        horizon = now - self._intensity.period
        times = self._times
        while times and times[0] < horizon:
            times.popleft()
        times.append(now)
        return len(times) > self._intensity.max_restarts

    @property
    def times(self) -> tuple[float, ...]:
        """The restarts in the window, oldest first."""
        return tuple(self._times)

    def __len__(self) -> int:
        return len(self._times)


def next_attempt(attempt: int, last_started: float, now: float, backoff: Backoff) -> int:
    """The consecutive-restart count after a failure at ``now``.

    ``attempt`` is the count so far (0 for a child never restarted);
    ``last_started`` is when the failed incarnation started.
    """
    if now - last_started >= backoff.reset_after:
        return 1
    return attempt + 1


def backoff_delay(attempt: int, backoff: Backoff, unit: float) -> float:
    """Seconds to wait before restart number ``attempt`` (1-based).

    ``unit`` is a random number in [0, 1); the result lies in
    ``[base, base * (1 + jitter)]`` with ``base = min(cap, initial *
    multiplier**(attempt - 1))``.
    """
    if attempt < 1:
        raise ValueError(f"attempt counts from 1, not {attempt}")
    if not 0.0 <= unit < 1.0:
        raise ValueError(f"unit must be in [0, 1), not {unit}")
    if backoff.initial == 0 or backoff.cap == 0:
        return 0.0
    # Grow by plain multiplication: it works for every valid multiplier (1
    # included) and any cap / initial ratio, and a power too large for a
    # float is past any cap.
    try:
        grown = backoff.initial * backoff.multiplier ** (attempt - 1)
    except OverflowError:
        grown = math.inf
    base = min(backoff.cap, grown)
    return base * (1.0 + backoff.jitter * unit)
