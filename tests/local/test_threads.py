"""The server's thread count: a pure function of the usable cores and the load."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.local import free_cpu_threads, pick_threads

cores = st.integers(min_value=-2, max_value=256)
loads = st.floats(allow_nan=True, allow_infinity=True)


@given(cores=cores, load=loads)
def test_at_least_one_and_never_more_than_the_cores(cores: int, load: float) -> None:
    assert 1 <= pick_threads(cores, load) <= max(1, cores)


@given(cores=st.integers(min_value=1, max_value=256), a=loads, b=loads)
def test_more_load_never_gives_more_threads(cores: int, a: float, b: float) -> None:
    def clean(x: float) -> float:
        return x if x >= 0 else 0.0  # nan and negatives count as idle

    low, high = sorted((clean(a), clean(b)))
    assert pick_threads(cores, high) <= pick_threads(cores, low)


@given(cores=st.integers(min_value=1, max_value=256))
def test_an_idle_machine_uses_every_core_and_a_full_one_uses_one(cores: int) -> None:
    assert pick_threads(cores, 0.0) == cores
    assert pick_threads(cores, float(cores)) == 1
    assert pick_threads(cores, math.inf) == 1


def test_the_busy_two_core_machine_gets_one_thread_and_a_quiet_one_two() -> None:
    assert pick_threads(2, 1.6) == 1 and pick_threads(2, 0.4) == 2
    assert free_cpu_threads() >= 1
