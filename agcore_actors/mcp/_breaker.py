"""The circuit breaker of one MCP server, as pure policy.

``failures`` counts consecutive connection failures (a failed connect, or a
connection that died within ``healthy_after`` seconds of coming up). At
``threshold`` failures the breaker opens: the server is parked until
``open_until``, then one probe connect decides. A failed probe opens it
again for longer (``open_for * multiplier**(opens-1)``, capped at
``max_open``); a connection that stays up ``healthy_after`` seconds resets
everything.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class BreakerConfig:
    threshold: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    open_for: float = 5.0
    multiplier: float = 2.0
    max_open: float = 300.0
    healthy_after: float = 30.0


@attrs.frozen
class BreakerState:
    failures: int = 0
    opens: int = 0
    open_until: float | None = None


def on_failure(
    config: BreakerConfig, state: BreakerState, now: float, up_since: float | None = None
) -> BreakerState:
    """The state after a failure at ``now`` of a connection up since ``up_since``."""
    if up_since is not None and now - up_since >= config.healthy_after:
        state = BreakerState()
    failures = state.failures + 1
    if failures < config.threshold:
        return BreakerState(failures, state.opens, None)
    opens = state.opens + 1
    delay = min(config.max_open, config.open_for * config.multiplier ** min(opens - 1, 64))
    return BreakerState(failures, opens, now + delay)


def on_success(state: BreakerState) -> BreakerState:
    """A connect (or probe) worked: close the breaker, keep the failure history."""
    return BreakerState(state.failures, state.opens, None)


def is_open(state: BreakerState, now: float) -> bool:
    return state.open_until is not None and now < state.open_until


def is_parked(state: BreakerState) -> bool:
    """Whether a new incarnation should start parked (and probe) instead of connecting."""
    return state.open_until is not None
