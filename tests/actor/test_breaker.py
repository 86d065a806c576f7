"""The circuit breaker against an independent model, and the two breakers the library
builds from it (an MCP server's connection, the compactor's summary step)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors.actor.policy import (
    Backoff,
    BreakerState,
    CircuitBreaker,
    breaker_allows,
    breaker_failure,
    breaker_retry_in,
    breaker_success,
)


class Model:
    """The rules written out as a plain state machine (no code shared with the breaker)."""

    def __init__(self, threshold: int, lengths: list[float], healthy: float) -> None:
        self.threshold, self.lengths, self.healthy = threshold, lengths, healthy
        self.streak = 0
        self.openings = 0
        self.reopen_at: float | None = None
        self.good_since: float | None = None

    def fail(self, now: float) -> None:
        if self.good_since is not None and now - self.good_since >= self.healthy:
            self.streak = self.openings = 0
        self.good_since = None
        self.streak += 1
        self.reopen_at = None
        if self.streak >= self.threshold:
            self.reopen_at = now + self.lengths[min(self.openings, len(self.lengths) - 1)]
            self.openings += 1

    def succeed(self, now: float) -> None:
        self.reopen_at = None
        self.good_since = now
        if self.healthy == 0:
            self.streak = self.openings = 0

    def allows(self, now: float) -> bool:
        return self.reopen_at is None or now >= self.reopen_at


def opening_lengths(initial: float, multiplier: float, cap: float, n: int = 80) -> list[float]:
    """The documented length of the 1st, 2nd, ... consecutive opening (no jitter)."""
    return [min(cap, initial * multiplier**k) for k in range(n)]


steps = st.lists(
    st.tuples(st.sampled_from(["fail", "ok", "look"]), st.floats(0, 50, allow_nan=False)),
    max_size=40,
)


@settings(max_examples=300)
@given(
    steps,
    st.integers(1, 5),
    st.sampled_from([0.5, 1.0, 5.0]),
    st.sampled_from([1.0, 1.5, 2.0]),
    st.sampled_from([0.0, 10.0, 1e9]),
)
def test_breaker_follows_the_model(
    events: list[tuple[str, float]],
    threshold: int,
    initial: float,
    multiplier: float,
    healthy: float,
) -> None:
    cap = 8.0
    config = CircuitBreaker(
        threshold=threshold,
        backoff=Backoff(initial=initial, multiplier=multiplier, cap=cap, jitter=0.0),
        healthy_after=healthy,
    )
    model = Model(threshold, opening_lengths(initial, multiplier, cap), healthy)
    state, now = BreakerState(), 0.0
    for kind, dt in events:
        now += dt
        if kind == "fail":
            state = breaker_failure(config, state, now)
            model.fail(now)
        elif kind == "ok":
            state = breaker_success(config, state, now)
            model.succeed(now)
        assert breaker_allows(state, now) == model.allows(now)
        assert state.open_until == pytest.approx(model.reopen_at)
        retry = breaker_retry_in(state, now)
        assert (retry is None) == (model.reopen_at is None)
        assert retry is None or retry == pytest.approx(max(0.0, (model.reopen_at or 0.0) - now))


@given(st.integers(1, 6), st.integers(0, 10))
def test_threshold_consecutive_failures_open_it(threshold: int, failures: int) -> None:
    config = CircuitBreaker(threshold=threshold)
    state = BreakerState()
    for _ in range(failures):
        state = breaker_failure(config, state, 0.0)
    assert breaker_allows(state, 0.0) == (failures < threshold)


def test_jitter_stretches_an_opening_by_at_most_its_share() -> None:
    config = CircuitBreaker(threshold=1, backoff=Backoff(initial=10.0, cap=10.0, jitter=0.5))
    state = breaker_failure(config, BreakerState(), 0.0, unit=0.999)
    assert state.open_until is not None and 10.0 < state.open_until < 15.0


def test_compactor_breaker_three_failures_cooldown_half_open_trial() -> None:
    # "3 consecutive failures, then a 300 s cooldown, then one trial; a success closes it."
    config = CircuitBreaker(
        threshold=3,
        backoff=Backoff(initial=300.0, multiplier=1.0, cap=300.0, jitter=0.0),
        healthy_after=0.0,
    )
    state = BreakerState()
    for t in (0.0, 1.0):
        state = breaker_failure(config, state, t)
        assert breaker_allows(state, t)
    state = breaker_failure(config, state, 2.0)
    assert not breaker_allows(state, 2.0) and not breaker_allows(state, 301.9)
    assert breaker_allows(state, 302.0)  # half-open: one trial
    state = breaker_failure(config, state, 302.0)  # the trial failed: the same cooldown again
    assert not breaker_allows(state, 601.9) and breaker_allows(state, 602.0)
    state = breaker_success(config, state, 602.0)
    assert state == BreakerState(closed_at=602.0)  # a success clears the count at once
    state = breaker_failure(config, state, 603.0)
    assert state.failures == 1 and breaker_allows(state, 603.0)


def test_a_connection_that_dies_at_once_keeps_the_count() -> None:
    config = CircuitBreaker(threshold=2, healthy_after=30.0)
    state = breaker_failure(config, BreakerState(), 0.0)
    state = breaker_success(config, state, 1.0)  # it came up ...
    state = breaker_failure(config, state, 2.0)  # ... and died a second later
    assert not breaker_allows(state, 2.0)


def test_a_connection_that_was_healthy_starts_a_fresh_count() -> None:
    config = CircuitBreaker(threshold=2, healthy_after=30.0)
    state = breaker_failure(config, BreakerState(), 0.0)
    state = breaker_success(config, state, 50.0)
    state = breaker_failure(config, state, 100.0)  # up for 50 s: healthy
    assert state.failures == 1 and state.open_until is None


# -- an MCP server's breaker: growing openings, reset by a healthy connection ------

mcp_events = st.lists(st.tuples(st.sampled_from(["fail", "ok"]), st.floats(0, 100)), max_size=20)


@settings(max_examples=200)
@given(mcp_events, st.integers(1, 5))
def test_breaker_opens_at_threshold_and_backs_off(
    steps: list[tuple[str, float]], threshold: int
) -> None:
    config = CircuitBreaker(
        threshold=threshold,
        backoff=Backoff(initial=1.0, multiplier=2.0, cap=8.0, jitter=0.0),
        healthy_after=1e9,
    )
    state, now, last_delay = BreakerState(), 0.0, 0.0
    for kind, dt in steps:
        now += dt
        if kind == "ok":
            state = breaker_success(config, state, now)
            assert breaker_allows(state, now)
            continue
        before = state
        state = breaker_failure(config, state, now)
        assert state.failures == before.failures + 1
        if state.failures < threshold:
            assert state.open_until is None
        else:
            assert state.open_until is not None and not breaker_allows(state, now)
            delay = state.open_until - now
            assert delay <= config.backoff.cap + 1e-9
            assert delay >= last_delay - 1e-9  # never shorter than the previous opening
            last_delay = delay


def test_breaker_resets_after_a_healthy_connection() -> None:
    config = CircuitBreaker(threshold=2, healthy_after=30.0)
    state = breaker_failure(config, BreakerState(), 0.0)
    state = breaker_success(config, state, 50.0)  # it came up at 50 s ...
    state = breaker_failure(config, state, 100.0)  # ... and was up 50 s: healthy
    assert state.failures == 1 and state.open_until is None


@pytest.mark.parametrize(
    "kwargs", [{"threshold": 0}, {"threshold": 1.5}, {"threshold": True}, {"healthy_after": -1}]
)
def test_bad_breaker_configuration_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]
