"""The Retry-After policy against a model that shares no code with it: within its bounds
always, doubling while refusals outpace completions, halving back once they stop."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.serve._shed import Backoff

# (seconds since the previous event, refused?) pairs
_events = st.lists(st.tuples(st.floats(0, 3, allow_nan=False), st.booleans()), max_size=300)


@given(_events, st.integers(1, 5), st.integers(5, 120))
def test_every_wait_is_within_its_bounds(events: list[tuple[float, bool]], floor: int,
                                         ceiling: int) -> None:  # fmt: skip
    backoff = Backoff(floor=floor, ceiling=ceiling)
    now = 0.0
    for gap, refused in events:
        now += gap
        if refused:
            assert floor <= backoff.refused(now) <= ceiling
        else:
            backoff.completed(now)
        assert floor <= backoff.wait <= ceiling


@given(st.integers(1, 8), st.integers(3, 50))  # more refusals than the 2 completions
def test_sustained_overload_doubles_the_wait_each_window_then_calm_halves_it(
    windows: int, per_window: int
) -> None:
    backoff = Backoff(floor=1, ceiling=60)
    now = 0.0
    model = 1.0
    backoff.completed(now)  # the first window starts
    for _ in range(windows):
        for _ in range(per_window):
            backoff.refused(now)
        backoff.completed(now)
        now += 1.0
        backoff.completed(now)  # rolls the window: refusals > completions
        model = min(model * 2, 60)
        assert backoff.wait == model
    for _ in range(windows):
        for _ in range(4):
            backoff.completed(now)
        now += 1.0
        backoff.completed(now)  # no refusal in the window
        model = max(model / 2, 1)
        assert backoff.wait == model


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        Backoff(floor=0)
    with pytest.raises(ValueError):
        Backoff(floor=10, ceiling=5)
