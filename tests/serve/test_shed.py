"""The admission rule and the Retry-After policy, against models that share no code with
them: a turn is admitted only when every bound has room, in the documented order, and the
turns in flight never pass the limit; every wait within its bounds; a burst's clients told
to come back about ``rate`` per second, never as a herd; nothing carried over once the
promised slots have passed; the rate measured only while the server is full."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.serve._shed import MIN_RATE, REFUSALS, RetrySpread, full, refusal

# (seconds since the previous event, refused?) pairs
_events = st.lists(st.tuples(st.floats(0, 3, allow_nan=False), st.booleans()), max_size=300)
_rates = st.floats(0.2, 300, allow_nan=False)
#: A window so long that no rate is measured: slots are spread by ``guess``.
NEVER = 1e12


@given(_events, st.integers(1, 5), st.integers(5, 120), _rates, st.floats(0.1, 5))
def test_every_wait_is_within_its_bounds(
    events: list[tuple[float, bool]], floor: int, ceiling: int, guess: float, window: float
) -> None:
    spread = RetrySpread(floor=floor, ceiling=ceiling, guess=guess, window=window)
    now = 0.0
    for gap, refused in events:
        now += gap
        if refused:
            assert floor <= spread.refused(now) <= ceiling
        else:
            spread.completed(now)
        assert spread.rate >= MIN_RATE


@given(st.integers(1, 3000), st.integers(1, 5), st.integers(10, 120), _rates)
def test_a_burst_is_told_to_come_back_about_rate_per_second(
    clients: int, floor: int, ceiling: int, rate: float
) -> None:
    spread = RetrySpread(floor=floor, ceiling=ceiling, guess=rate, window=NEVER)
    now = 1000.0
    waits = [spread.refused(now) for _ in range(clients)]
    # Slots up to the ceiling: the k-th refusal of the burst waits about floor + k / rate.
    promised = min(clients, math.floor(rate * (ceiling - floor)) + 1)
    slotted, late = waits[: promised - 1], waits[promised + 1 :]  # +-1: float rounding
    assert slotted == sorted(slotted)
    for k, wait in enumerate(slotted):
        assert abs(wait - (floor + k / rate)) <= 1.0 + 1e-6
    for second in set(slotted):
        assert slotted.count(second) <= math.ceil(rate) + 1
    # Past the ceiling: spread evenly over its later half.
    low = max(floor, ceiling - ceiling // 2)
    assert all(low <= wait <= ceiling for wait in late)
    if late:
        fair = math.ceil(len(late) / (ceiling - low + 1))
        assert max(late.count(w) for w in set(late)) <= fair + 1


@given(
    st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=400),
    st.integers(1, 3),
    _rates,
)
def test_refused_clients_never_come_back_as_a_herd(
    gaps: list[float], floor: int, rate: float
) -> None:
    """Whenever they are refused, the clients given a slot come back at most about
    ``2 * rate + 2`` in any one second (a slot's whole-second wait rounds up by < 1 s)."""
    spread = RetrySpread(floor=floor, ceiling=60, guess=rate, window=NEVER)
    now, returns = 0.0, []
    for gap in gaps:
        now += gap
        before = spread._late
        wait = spread.refused(now)
        if spread._late == before:
            returns.append(now + wait)
    returns.sort()
    for i, start in enumerate(returns):
        within = sum(1 for r in returns[i:] if r < start + 1.0)
        assert within <= 2 * rate + 2


@given(st.integers(1, 500), st.integers(1, 5), _rates, st.floats(0.01, 100))
def test_once_the_promised_slots_have_passed_a_refusal_waits_the_floor(
    clients: int, floor: int, rate: float, pause: float
) -> None:
    spread = RetrySpread(floor=floor, ceiling=60, guess=rate, window=NEVER)
    for _ in range(clients):
        spread.refused(0.0)
    after = (min(clients - 1, rate * 60) + 1) / rate  # the slot after the last promised
    assert spread.refused(after + pause) == floor


@given(st.floats(0.5, 200), st.integers(0, 200), st.integers(0, 12), st.integers(0, 50))
def test_the_rate_is_measured_only_while_the_server_is_full(
    guess: float, per_window: int, windows: int, quiet: int
) -> None:
    """Each window in which someone was refused moves the rate half way to what completed
    in it; windows without a refusal leave it as it was."""
    spread = RetrySpread(guess=guess, window=1.0)
    model, now = guess, 0.0
    spread.refused(now)  # the first window starts, full
    for last in [False] * windows + [True]:
        for _ in range(per_window):
            spread.completed(now + 0.5)
        now += 1.0
        if last:
            spread.completed(now)  # rolls the window; the next has no refusal
        else:
            spread.refused(now)  # rolls the window; the next is full too
        model = (model + per_window) / 2
        assert spread.rate == pytest.approx(max(MIN_RATE, model))
    for _ in range(windows):
        for _ in range(quiet):
            spread.completed(now + 0.5)
        now += 1.0
        spread.completed(now)
        assert spread.rate == pytest.approx(max(MIN_RATE, model))


@given(st.floats(0.5, 200), st.integers(0, 200), st.integers(1, 12))
def test_refusals_of_a_server_that_was_not_full_measure_nothing(
    guess: float, per_window: int, windows: int
) -> None:
    """A 429 for one busy session, or a 503 for too many streams, does not say what the
    server can do: the rate stays where it was."""
    spread = RetrySpread(guess=guess, window=1.0)
    now = 0.0
    spread.completed(now)
    for _ in range(windows):
        spread.refused(now, full=False)
        for _ in range(per_window):
            spread.completed(now + 0.5)
        now += 1.0
        spread.completed(now)
        assert spread.rate == pytest.approx(max(MIN_RATE, guess))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        RetrySpread(floor=0)
    with pytest.raises(ValueError):
        RetrySpread(floor=10, ceiling=5)
    with pytest.raises(ValueError):
        RetrySpread(guess=0)


# -- admission ------------------------------------------------------------------------------

_counts = st.integers(0, 50)


@given(_counts, _counts, st.integers(1, 50))
def test_the_server_is_full_exactly_when_turns_and_undecided_posts_reach_the_limit(
    in_flight: int, undecided: int, admitted: int
) -> None:
    assert full(in_flight, undecided, admitted) is (in_flight + undecided >= admitted)
    if full(in_flight, undecided, admitted):  # more of either never frees a place
        assert full(in_flight + 1, undecided, admitted)
        assert full(in_flight, undecided + 1, admitted)


@given(
    st.booleans(), st.booleans(), _counts, st.integers(1, 50), _counts, st.integers(1, 50),
    _counts, st.integers(1, 10),
)  # fmt: skip
def test_a_turn_is_admitted_only_when_every_bound_has_room(
    closing: bool,
    streaming: bool,
    streams: int,
    max_streams: int,
    in_flight: int,
    admitted: int,
    waiting: int,
    max_queued: int,
) -> None:
    why = refusal(
        closing=closing, streaming=streaming, streams=streams, max_streams=max_streams,
        in_flight=in_flight, admitted=admitted, waiting=waiting, max_queued=max_queued,
    )  # fmt: skip
    reasons = [
        ("shutting_down", closing),
        ("too_many_streams", streaming and streams >= max_streams),
        ("overloaded", in_flight >= admitted),
        ("session_busy", waiting > max_queued),
    ]
    # The first bound without room, in the documented order; None when all have room.
    assert why == next((name for name, hit in reasons if hit), None)
    if why is not None:
        status, message = REFUSALS[why]
        assert status == (429 if why == "session_busy" else 503) and message


@given(st.lists(st.booleans(), max_size=300), st.integers(1, 20))
def test_admitting_by_the_rule_never_runs_more_than_the_limit(
    steps: list[bool], admitted: int
) -> None:
    """A run of arrivals (True) and endings (False): the turns in flight stay within the
    limit, and an arrival is refused as overloaded only when it is reached."""
    running = 0
    for arrives in steps:
        if not arrives:
            running = max(0, running - 1)
            continue
        why = refusal(
            closing=False, streaming=False, streams=0, max_streams=1, in_flight=running,
            admitted=admitted, waiting=0, max_queued=1,
        )  # fmt: skip
        assert (why == "overloaded") is (running == admitted)
        if why is None:
            running += 1
        assert running <= admitted
