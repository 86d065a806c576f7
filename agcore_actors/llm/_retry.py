"""Retry policy: pure functions over frozen configuration (no event loop).

- Backoff for retry ``k`` (1-based): ``d = min(base * 2**(k-1), max_delay)``
  stretched by a random factor in ``[1, 1 + jitter)``. The jitter is added
  after the cap on purpose, so concurrent callers at the cap do not retry in
  lockstep; a delay therefore lies in ``[d, d * (1 + jitter))`` and never
  exceeds ``max_delay * (1 + jitter)``.
- ``Retry-After`` (seconds, fractional seconds or an HTTP-date, and OpenAI's
  ``retry-after-ms``) of the *current* error is honoured: the wait is at
  least that long. A server that asks for more than ``max_retry_after``
  seconds is not waited for: the error is raised.
- A retry that would start after the call's deadline is not made.
- A stream that already delivered output to its caller is never retried.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from typing import Any

import attrs

from ._errors import LlmError


def _non_negative(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be >= 0, not {value!r}")


def _optional_positive(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not (isinstance(value, int | float) and value > 0):
        raise ValueError(f"{attribute.name} must be > 0 seconds or None, not {value!r}")


@attrs.frozen
class RetryConfig:
    """How often and how long to retry (defaults: the seed's 3, 1 s, 30 s, 0.25)."""

    max_retries: int = attrs.field(default=3, validator=_non_negative)
    base_delay: float = attrs.field(default=1.0, validator=_non_negative)
    max_delay: float = attrs.field(default=30.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.25, validator=_non_negative)
    max_retry_after: float = attrs.field(default=120.0, validator=_non_negative)


@attrs.frozen
class Timeouts:
    """Time limits of one call (all on trio's clock).

    ``attempt``: one non-streamed attempt, and for a stream the wait for its
    first event. ``idle``: the longest gap between two events of a stream.
    ``connect``: TCP/TLS connect. ``call``: the whole call, retries and
    backoff included (seed 002's 600 s). None disables a limit.
    """

    attempt: float | None = attrs.field(default=120.0, validator=_optional_positive)
    idle: float | None = attrs.field(default=120.0, validator=_optional_positive)
    connect: float | None = attrs.field(default=10.0, validator=_optional_positive)
    call: float | None = attrs.field(default=600.0, validator=_optional_positive)


def backoff_delay(config: RetryConfig, retry: int, u: float) -> float:
    """Delay before retry number ``retry`` (1-based; 0 counts as 1), for ``u`` in [0, 1)."""
    exponent = max(retry, 1) - 1
    # 2**exponent overflows floats past ~1024; the cap makes that moot.
    raw = config.base_delay * 2.0**exponent if exponent < 1000 else math.inf
    capped = min(raw, config.max_delay)
    return capped * (1.0 + config.jitter * min(max(u, 0.0), 1.0))


def retry_after_of(error: BaseException) -> float | None:
    value = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, int | float) else None


@attrs.frozen
class Decision:
    """Retry after ``delay`` seconds, or give up (``delay`` is None) for ``reason``."""

    delay: float | None
    reason: str

    @property
    def retry(self) -> bool:
        return self.delay is not None


def decide(
    config: RetryConfig,
    error: BaseException,
    retries_done: int,
    u: float,
    *,
    now: float,
    deadline: float = math.inf,
    output_delivered: bool = False,
) -> Decision:
    """Whether to retry after ``error``, which ended attempt ``retries_done + 1``."""
    if output_delivered:
        return Decision(None, "output was already delivered")
    if not isinstance(error, LlmError) or not error.is_retryable():
        return Decision(None, "not retryable")
    if retries_done >= config.max_retries:
        return Decision(None, "retries exhausted")
    delay = backoff_delay(config, retries_done + 1, u)
    server_wait = retry_after_of(error)
    if server_wait is not None:
        if server_wait > config.max_retry_after:
            return Decision(None, "the server asks to wait longer than max_retry_after")
        delay = max(delay, server_wait)
    if now + delay >= deadline:
        return Decision(None, "the call deadline comes before the retry")
    return Decision(delay, "retryable")


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
