"""Supervision and backoff policy as frozen data and pure functions.

No event loop, no I/O: these are what the supervisor applies, and what other packages
reuse (LLM retry delays and MCP circuit breaking use :class:`Backoff` and
:func:`backoff_delay`; a supervisor isolates a child that keeps crashing with a
:class:`CircuitBreaker`, see ``isolated_crash``). Property-test them without trio.
"""

from __future__ import annotations

from .._exports import publish
from ._breaker import (
    DEFAULT_BREAKER_BACKOFF,
    BreakerState,
    CircuitBreaker,
    breaker_allows,
    breaker_failure,
    breaker_retry_in,
    breaker_success,
)
from ._isolation import (
    DEFAULT_ISOLATION,
    DEFAULT_ISOLATION_BACKOFF,
    isolated_crash,
    isolated_start,
)
from ._policy import (
    DEFAULT_BACKOFF,
    DEFAULT_INTENSITY,
    NO_BACKOFF,
    Backoff,
    Intensity,
    Restart,
    RestartWindow,
    Strategy,
    backoff_delay,
    next_attempt,
    record_restart,
    restart_set,
    should_restart,
    should_restart_sibling,
)

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BREAKER_BACKOFF",
    "DEFAULT_INTENSITY",
    "DEFAULT_ISOLATION",
    "DEFAULT_ISOLATION_BACKOFF",
    "NO_BACKOFF",
    "Backoff",
    "BreakerState",
    "CircuitBreaker",
    "Intensity",
    "Restart",
    "RestartWindow",
    "Strategy",
    "backoff_delay",
    "breaker_allows",
    "breaker_failure",
    "breaker_retry_in",
    "breaker_success",
    "isolated_crash",
    "isolated_start",
    "next_attempt",
    "record_restart",
    "restart_set",
    "should_restart",
    "should_restart_sibling",
]

publish(__name__, __all__)
