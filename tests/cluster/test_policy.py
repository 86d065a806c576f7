"""The lease keeper's pure decisions, against an independent model of the store's clock:
a host that follows them never acts on a lease the store no longer holds for it."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import pytest
from hypothesis import given

from agcore_actors.cluster import ClusterConfig
from agcore_actors.cluster.policy import (
    Held,
    LeaseTiming,
    after_renewal,
    fence_deadline,
    next_renewal,
    overdue,
)

seconds = st.floats(0, 50, allow_nan=False)
#: (when sent, delay until the store applies it, delay of its reply or None: lost)
Renewal = tuple[float, float, float | None]


@st.composite
def timings(draw: st.DrawFn) -> LeaseTiming:
    ttl = draw(st.floats(0.5, 60))
    margin = draw(st.floats(0, ttl * 0.9))
    interval = draw(st.floats(0.01, max(0.01, (ttl - margin) * 0.99)))
    return LeaseTiming(ttl, interval, margin)


@given(timings(), st.floats(0, 1000), seconds)
def test_a_lease_is_given_up_a_margin_before_it_can_expire(
    timing: LeaseTiming, sent: float, later: float
) -> None:
    deadline = fence_deadline(sent, timing)
    assert deadline <= sent + timing.ttl - timing.margin + 1e-9
    held = {"s": Held(1, sent)}
    assert overdue(held, deadline, timing) == ["s"]
    assert overdue(held, deadline + later, timing) == ["s"]
    if deadline > sent:
        assert overdue(held, sent, timing) == []


@given(timings(), st.none() | st.floats(0, 1000), st.floats(0, 1000))
def test_the_next_renewal_is_never_in_the_past_and_at_most_an_interval_away(
    timing: LeaseTiming, last: float | None, now: float
) -> None:
    at = next_renewal(last, now, timing)
    assert at >= now
    if last is None:
        assert at == now
    else:
        assert at == max(now, last + timing.renew_interval)


held_books = st.dictionaries(
    st.sampled_from("abcdef"), st.builds(Held, st.integers(1, 5), st.floats(0, 100)), max_size=6
)
pairs = st.lists(st.tuples(st.sampled_from("abcdefg"), st.integers(1, 5)), max_size=8)


@given(held_books, st.floats(0, 200), pairs, pairs)
def test_a_reply_touches_only_leases_held_with_its_token(
    held: dict[str, Held], sent: float, renewed: list[tuple[str, int]], lost: list[tuple[str, int]]
) -> None:
    out = after_renewal(held, sent, renewed, lost)
    lost_match = {s for s, t in lost if s in held and held[s].token == t}
    renewed_match = {s for s, t in renewed if s in held and held[s].token == t}
    assert set(out.lost) == lost_match
    assert len(out.lost) == len(set(out.lost))
    assert set(out.held) == set(held) - lost_match
    for session, h in out.held.items():
        before = held[session]
        assert h.token == before.token
        if session in renewed_match:
            assert h.sent == max(before.sent, sent)
        else:
            assert h == before  # not named (or another token): its time runs on


# -- the safety property, against a model of the store ---------------------------------------


@st.composite
def schedules(draw: st.DrawFn) -> tuple[LeaseTiming, float, list[Renewal]]:
    """Renewals: (when sent, delay until the store applies it, delay of the reply or None
    when the reply is lost), plus how much faster than the host's the store's clock runs
    (within what the margin allows)."""
    timing = draw(timings())
    # The store's clock may run faster by up to what the margin absorbs over a TTL.
    top = timing.ttl / (timing.ttl - timing.margin)
    rate = draw(st.floats(1.0, top)) if top > 1 else 1.0
    t = 0.0
    out = []
    for _ in range(draw(st.integers(1, 12))):
        t += draw(st.floats(0, timing.ttl))
        out.append(
            (t, draw(st.floats(0, timing.ttl * 1.5)), draw(st.none() | st.floats(0, timing.ttl)))
        )
    return timing, rate, out


@given(schedules(), st.floats(0, 5))
def test_a_host_following_the_policy_never_holds_a_lease_the_store_let_go(
    schedule: tuple[LeaseTiming, float, list[Renewal]],
    first_delay: float,
) -> None:
    """The store (its own clock, running up to ``rate`` times faster) grants at t=0 on a
    request sent at t=0 and received ``first_delay`` later; renewals reach it after
    arbitrary delays, in any order, their replies late or lost. At every moment the host
    believes it holds the lease, the store still holds it for the host."""
    timing, rate, renewals = schedule
    store_ttl = timing.ttl / rate  # a TTL of the store's clock, in host seconds
    # The store's view: the lease's expiry, in host seconds.
    expiry = first_delay + store_ttl
    held: dict[str, Held] = {"s": Held(1, 0.0)}
    events: list[tuple[float, int, str, float]] = []  # (time, order, what, sent)
    for i, (sent, to_store, back) in enumerate(renewals):
        events.append((sent + to_store, i, "apply", sent))
        if back is not None:
            events.append((sent + to_store + back, i, "reply", sent))
    applied: dict[float, bool] = {}
    checkpoints = sorted({t for t, *_ in events} | {fence_deadline(0.0, timing)})
    for time, _, what, sent in sorted(events):
        # Before each event: wherever the host still holds it, so does the store.
        _check(held, timing, expiry, checkpoints, time)
        if what == "apply":
            live = time < expiry
            applied[sent] = live
            if live:
                expiry = max(expiry, time + store_ttl)
        else:
            ok = applied[sent]
            token = held["s"].token if "s" in held else 1
            held = after_renewal(
                held, sent, [("s", token)] if ok else [], [] if ok else [("s", token)]
            ).held
    _check(held, timing, expiry, checkpoints, math.inf)


def _check(
    held: dict[str, Held], timing: LeaseTiming, expiry: float, points: list[float], upto: float
) -> None:
    if "s" not in held:
        return
    deadline = fence_deadline(held["s"].sent, timing)
    # The host stops serving at its deadline: it must come no later than the store's expiry.
    assert deadline <= expiry + 1e-9, (deadline, expiry)
    for t in points:
        if t < upto and not overdue(held, t, timing):
            assert t < expiry + 1e-9


def test_the_defaults_let_three_renewals_fail_before_self_fencing() -> None:
    config = ClusterConfig()
    timing = LeaseTiming.of(config)
    assert (timing.ttl - timing.margin) / timing.renew_interval - 1 == pytest.approx(3)
