"""Properties of the pure supervision policy (``agcore_actors.actor._policy``).

Each property is checked against the rule as documented (OTP's, plus the
backoff formula), written out independently here.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agcore_actors import NO_BACKOFF, Backoff, Intensity, Restart, Strategy
from agcore_actors.actor._policy import (
    backoff_delay,
    next_attempt,
    record_restart,
    restart_set,
    should_restart,
    should_restart_sibling,
)
from agcore_actors.actor.policy import RestartWindow


def finite(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


backoffs = st.builds(
    Backoff,
    initial=finite(0, 100),
    multiplier=finite(1, 10),
    cap=finite(0, 1000),
    jitter=finite(0, 1),
    reset_after=finite(0, 100),
)
attempts = st.integers(1, 5000)
units = st.floats(0, 1, exclude_max=True)


def expected_base(backoff: Backoff, attempt: int) -> float:
    """min(cap, initial * multiplier**(attempt - 1)), with overflow meaning 'huge'."""
    if backoff.initial == 0:
        return 0.0
    try:
        grown = backoff.initial * backoff.multiplier ** (attempt - 1)
    except OverflowError:
        grown = math.inf
    return min(backoff.cap, grown)


# -- backoff_delay ---------------------------------------------------------------


@given(backoffs, attempts, units)
@example(Backoff(initial=0.5, multiplier=1.0, cap=2.0, jitter=0.0), 3, 0.0)  # multiplier 1
@example(Backoff(initial=0.25, multiplier=2.0, cap=1.0, jitter=0.5), 3, 0.5)  # reaches cap
@example(Backoff(initial=5.0, multiplier=2.0, cap=1.0, jitter=0.0), 1, 0.0)  # cap < initial
@example(Backoff(initial=5e-324, multiplier=5.0, cap=1.0), 443, 0.0)  # cap / initial overflows
@example(Backoff(initial=2.0, multiplier=2.0, cap=5e-324), 1, 0.0)  # cap / initial underflows
def test_backoff_delay_lies_between_base_and_base_with_jitter(
    backoff: Backoff, attempt: int, unit: float
) -> None:
    base = expected_base(backoff, attempt)
    delay = backoff_delay(attempt, backoff, unit)
    tolerance = 1e-9 * max(1.0, base)
    assert base - tolerance <= delay <= base * (1 + backoff.jitter) + tolerance
    assert delay <= backoff.cap * (1 + backoff.jitter) + tolerance
    assert delay == pytest.approx(base * (1 + backoff.jitter * unit), rel=1e-9, abs=1e-12)


@given(backoffs, attempts, attempts, units)
def test_backoff_delay_never_shrinks_as_attempts_grow(
    backoff: Backoff, a: int, b: int, unit: float
) -> None:
    low, high = sorted((a, b))
    assert backoff_delay(low, backoff, unit) <= backoff_delay(high, backoff, unit)


@given(attempts, units)
def test_no_backoff_restarts_at_once(attempt: int, unit: float) -> None:
    assert backoff_delay(attempt, NO_BACKOFF, unit) == 0.0


def test_backoff_delay_doubles_up_to_the_cap() -> None:
    backoff = Backoff(initial=1, multiplier=2, cap=5, jitter=0)
    assert [backoff_delay(n, backoff, 0.0) for n in range(1, 6)] == [1, 2, 4, 5, 5]


@pytest.mark.parametrize("attempt", [0, -1])
def test_backoff_attempts_count_from_one(attempt: int) -> None:
    with pytest.raises(ValueError):
        backoff_delay(attempt, Backoff(), 0.0)


@pytest.mark.parametrize("unit", [-0.1, 1.0, 1.5, math.nan])
def test_backoff_unit_must_lie_in_unit_interval(unit: float) -> None:
    with pytest.raises(ValueError):
        backoff_delay(1, Backoff(), unit)


# -- next_attempt ----------------------------------------------------------------


@given(
    st.integers(0, 100),
    finite(-1000, 1000),
    finite(0, 1000),
    backoffs,
)
def test_next_attempt_counts_consecutive_failures_and_resets_after_a_quiet_run(
    attempt: int, last_started: float, ran_for: float, backoff: Backoff
) -> None:
    now = last_started + ran_for
    expected = 1 if now - last_started >= backoff.reset_after else attempt + 1
    assert next_attempt(attempt, last_started, now, backoff) == expected


def test_next_attempt_resets_exactly_at_reset_after() -> None:
    backoff = Backoff(reset_after=30)
    assert next_attempt(4, 10.0, 39.5, backoff) == 5
    assert next_attempt(4, 10.0, 40.0, backoff) == 1


def test_a_child_never_started_begins_at_the_first_attempt() -> None:
    assert next_attempt(0, -math.inf, 0.0, Backoff()) == 1


# -- record_restart: the intensity window ----------------------------------------------

# Times in eighths of a second: exact in binary, and often exactly one
# period apart, which is the edge of the window.
eighths = st.integers(0, 80).map(lambda n: n / 8)
intensities = st.builds(
    Intensity,
    max_restarts=st.integers(0, 5),
    period=st.integers(1, 24).map(lambda n: n / 8),
)


@given(st.lists(eighths, max_size=12), st.integers(0, 40), intensities)
@example([0.0], 8, Intensity(max_restarts=1, period=1.0))  # exactly one period apart
def test_record_restart_keeps_the_restarts_of_the_last_period(
    times: list[float], later: int, intensity: Intensity
) -> None:
    history = sorted(times)
    now = (history[-1] if history else 0.0) + later / 8
    window, exceeded = record_restart(history, now, intensity)
    # OTP keeps every restart at most `period` old (supervisor:add_restart
    # keeps R >= Now - Period); exact arithmetic on the eighths.
    period = Fraction(intensity.period)
    kept = [t for t in history if Fraction(now) - Fraction(t) <= period]
    assert window == (*kept, now)
    assert exceeded == (len(kept) + 1 > intensity.max_restarts)


@given(intensities, st.lists(st.integers(0, 16), min_size=1, max_size=30))
def test_giving_up_happens_exactly_when_a_brute_force_count_exceeds_the_limit(
    intensity: Intensity, gaps: list[int]
) -> None:
    """Feed restarts one by one; compare with counting all of them from scratch."""
    times: list[float] = []
    history: tuple[float, ...] = ()
    now = 0.0
    for gap in gaps:
        now += gap / 8
        times.append(now)
        history, exceeded = record_restart(history, now, intensity)
        in_period = [t for t in times if now - t <= intensity.period]
        assert exceeded == (len(in_period) > intensity.max_restarts)
        assert history == tuple(in_period)


@given(intensities, st.lists(st.integers(0, 16), min_size=1, max_size=30))
def test_restart_window_agrees_with_a_brute_force_count(
    intensity: Intensity, gaps: list[int]
) -> None:
    window = RestartWindow(intensity)
    times: list[float] = []
    now = 0.0
    for gap in gaps:
        now += gap / 8
        times.append(now)
        exceeded = window.record(now)
        in_period = [t for t in times if now - t <= intensity.period]
        assert exceeded == (len(in_period) > intensity.max_restarts)
        assert window.times == tuple(in_period)


class CountedTime(float):
    """A time that counts how often it is compared (the window's cost)."""

    comparisons = 0

    def __lt__(self, other: float) -> bool:
        CountedTime.comparisons += 1
        return float(self) < other

    def __ge__(self, other: float) -> bool:
        CountedTime.comparisons += 1
        return float(self) >= other


def test_recording_a_restart_costs_the_same_however_full_the_window_is() -> None:
    """A session host's supervisor may allow many restarts in a long period: recording one
    must not look at every earlier one."""
    window = RestartWindow(Intensity(max_restarts=10**6, period=10**9))
    CountedTime.comparisons = 0
    n = 2000
    for i in range(n):
        window.record(CountedTime(i))
    assert len(window.times) == n
    assert CountedTime.comparisons <= 2 * n  # a copy per restart would be n * n / 2


# -- restart_set and restart types -----------------------------------------------------

orders = st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=1, unique=True)


@given(orders, st.data())
def test_restart_set_per_strategy(order: list[str], data: st.DataObject) -> None:
    failed = data.draw(st.sampled_from(order))
    started_after = order[order.index(failed) :]
    assert restart_set(Strategy.ONE_FOR_ONE, order, failed) == [failed]
    assert restart_set(Strategy.ONE_FOR_ALL, order, failed) == order
    rest = restart_set(Strategy.REST_FOR_ONE, order, failed)
    assert rest == started_after
    assert rest[0] == failed
    assert set(rest) | set(order[: order.index(failed)]) == set(order)


@pytest.mark.parametrize(
    ("restart", "crashed", "expected"),
    [
        (Restart.PERMANENT, True, True),
        (Restart.PERMANENT, False, True),
        (Restart.TRANSIENT, True, True),
        (Restart.TRANSIENT, False, False),
        (Restart.TEMPORARY, True, False),
        (Restart.TEMPORARY, False, False),
    ],
)
def test_should_restart_truth_table(restart: Restart, crashed: bool, expected: bool) -> None:
    assert should_restart(restart, crashed) is expected


@pytest.mark.parametrize(
    ("restart", "expected"),
    [(Restart.PERMANENT, True), (Restart.TRANSIENT, True), (Restart.TEMPORARY, False)],
)
def test_siblings_stopped_by_a_failure_restart_unless_temporary(
    restart: Restart, expected: bool
) -> None:
    assert should_restart_sibling(restart) is expected


# -- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"initial": -0.1},
        {"cap": -1.0},
        {"jitter": -0.5},
        {"jitter": 1.01},
        {"reset_after": -1.0},
        {"multiplier": 0.99},
        {"multiplier": 0.0},
        {"multiplier": -2.0},
        {"initial": math.nan},
        {"multiplier": math.nan},
    ],
)
def test_invalid_backoff_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_restarts": -1}, {"period": 0.0}, {"period": -5.0}, {"period": math.nan}],
)
def test_invalid_intensity_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Intensity(**kwargs)  # type: ignore[arg-type]


@given(
    finite(0, 1e6),
    finite(1, 1e3),
    finite(0, 1e6),
    finite(0, 1),
    finite(0, 1e6),
)
def test_every_documented_backoff_is_accepted(
    initial: float, multiplier: float, cap: float, jitter: float, reset_after: float
) -> None:
    backoff = Backoff(initial, multiplier, cap, jitter, reset_after)
    assert backoff_delay(1, backoff, 0.0) == min(cap, initial)
