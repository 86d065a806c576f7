"""Retry policy: pure functions over frozen configuration (no event loop, no I/O).

- Backoff for retry ``k`` (1-based) is the actor runtime's
  :func:`agcore_actors.actor.policy.backoff_delay` with multiplier 2:
  ``d = min(base_delay * 2**(k-1), max_delay)`` stretched by a random factor in
  ``[1, 1 + jitter)``. The jitter comes after the cap on purpose, so concurrent
  callers at the cap do not retry in lock-step; a delay therefore lies in
  ``[d, d * (1 + jitter))`` and never exceeds ``max_delay * (1 + jitter)``.
- ``Retry-After`` (seconds, fractional seconds or an HTTP-date, and OpenAI's
  ``retry-after-ms``) of the *current* error is honoured: the wait is at least that
  long. A server that asks for more than ``max_retry_after`` seconds is not waited
  for: the error is raised.
- A retry that would start after the call's deadline is not made.
- A stream that already delivered output to its caller is never retried.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping

import attrs

from .._validators import non_negative, optional_positive
from ..actor.policy import Backoff, backoff_delay
from ._errors import LlmError


def _unit_interval(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be in [0, 1], not {value!r}")


@attrs.frozen
class RetryConfig:
    """How often and how long to retry a failed model call."""

    #: Retries after the first attempt (0: never retry).
    max_retries: int = attrs.field(default=3, validator=non_negative)
    #: Seconds before the first retry; each next one doubles it.
    base_delay: float = attrs.field(default=1.0, validator=non_negative)
    #: The longest backoff, before jitter.
    max_delay: float = attrs.field(default=30.0, validator=non_negative)
    #: Random stretch of each delay, as a fraction of it (0 to 1).
    jitter: float = attrs.field(default=0.25, validator=_unit_interval)
    #: A server asking to wait longer than this (seconds) is not retried.
    max_retry_after: float = attrs.field(default=120.0, validator=non_negative)

    @property
    def backoff(self) -> Backoff:
        """The same schedule as the runtime's :class:`~agcore_actors.actor.policy.Backoff`."""
        return Backoff(
            initial=self.base_delay, multiplier=2.0, cap=self.max_delay, jitter=self.jitter
        )


@attrs.frozen
class Timeouts:
    """Time limits of one call, all on trio's clock; None disables a limit."""

    #: One non-streamed attempt; for a stream, the wait for its first event.
    attempt: float | None = attrs.field(default=120.0, validator=optional_positive)
    #: The longest silence of a stream once its response has started.
    idle: float | None = attrs.field(default=120.0, validator=optional_positive)
    #: TCP and TLS connect.
    connect: float | None = attrs.field(default=10.0, validator=optional_positive)
    #: The whole call, retries and backoff included.
    call: float | None = attrs.field(default=600.0, validator=optional_positive)


def retry_delay(config: RetryConfig, retry: int, u: float) -> float:
    """Delay before retry number ``retry`` (1-based; 0 counts as 1), for ``u`` in [0, 1)."""
    unit = min(max(u, 0.0), math.nextafter(1.0, 0.0))
    return backoff_delay(max(retry, 1), config.backoff, unit)


def retry_after_of(error: BaseException) -> float | None:
    """The server's requested wait carried by ``error``, if any."""
    value = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, int | float) else None


@attrs.frozen
class RetryDecision:
    """Retry after ``delay`` seconds, or give up (``delay`` is None) for ``reason``."""

    delay: float | None
    reason: str

    @property
    def retry(self) -> bool:
        """True when the call should be retried."""
        return self.delay is not None


def retry_decision(
    config: RetryConfig,
    error: BaseException,
    retries_done: int,
    u: float,
    *,
    now: float,
    deadline: float = math.inf,
    output_delivered: bool = False,
) -> RetryDecision:
    """Whether to retry after ``error``, which ended attempt ``retries_done + 1``."""
    if output_delivered:
        return RetryDecision(None, "output was already delivered")
    if not isinstance(error, LlmError) or not error.is_retryable():
        return RetryDecision(None, "not retryable")
    if retries_done >= config.max_retries:
        return RetryDecision(None, "retries exhausted")
    delay = retry_delay(config, retries_done + 1, u)
    server_wait = retry_after_of(error)
    if server_wait is not None:
        if server_wait > config.max_retry_after:
            return RetryDecision(None, "the server asks to wait longer than max_retry_after")
        delay = max(delay, server_wait)
    if now + delay >= deadline:
        return RetryDecision(None, "the call deadline comes before the retry")
    return RetryDecision(delay, "retryable")


def parse_retry_after(headers: Mapping[str, str], wall_now: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or
    HTTP-date, relative to ``wall_now``, a Unix time); None when absent or bad."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        return None
    return max(0.0, when.timestamp() - wall_now)
