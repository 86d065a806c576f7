"""Property tests of the pure memory policy: eviction choice and text scoring.
No event loop, no store."""

from __future__ import annotations

import math

import hypothesis.strategies as st
from hypothesis import given

from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    EvictionPolicy,
    Hybrid,
    Lru,
    NoEviction,
    RecallBased,
    Ttl,
)
from agcore_actors.memory._item import prefix_upper_bound
from agcore_actors.memory.policy import (
    ItemStats,
    choose_victims,
    extract_keywords,
    is_expired,
    recall_value,
    sweep_due,
    text_overlap_dice,
    tokens,
)

NOW = 10_000.0

policies = st.one_of(
    st.just(NoEviction()),
    st.builds(Ttl, ttl=st.floats(0, 500)),
    st.builds(Capacity, max_items=st.integers(0, 10)),
    st.builds(Lru, max_items=st.integers(0, 10)),
    st.builds(RecallBased, max_items=st.integers(0, 10)),
    st.builds(
        Hybrid,
        ttl=st.none() | st.floats(0, 500),
        max_items=st.none() | st.integers(0, 10),
    ),
)


@st.composite
def item_sets(draw: st.DrawFn) -> list[ItemStats]:
    n = draw(st.integers(0, 25))
    seqs = draw(st.permutations(range(1, 2 * n + 1)))
    out = []
    for i in range(n):
        recalls = draw(st.integers(0, 5))
        out.append(
            ItemStats(
                id=f"i{i}",
                created_at=NOW - draw(st.sampled_from([0.0, 1.0, 100.0, 400.0, 1000.0])),
                seq=seqs[2 * i],
                access_seq=seqs[2 * i + 1],
                pinned=draw(st.booleans()),
                recall_count=recalls,
                recall_score_total=recalls * draw(st.floats(0, 1)),
                recalled_at=None if not recalls else NOW - draw(st.floats(0, 1000)),
            )
        )
    return out


@given(policies, item_sets())
def test_victims_are_exactly_the_expired_plus_the_excess(
    policy: EvictionPolicy, items: list[ItemStats]
) -> None:
    victims = choose_victims(policy, items, NOW)
    assert len(victims) == len(set(victims))
    by_id = {i.id: i for i in items}
    assert not any(by_id[v].pinned for v in victims)  # pinned items are never evicted
    survivors = [i for i in items if i.id not in set(victims)]
    assert not any(is_expired(policy, i.created_at, i.pinned, NOW) for i in survivors)
    cap = getattr(policy, "max_items", None)
    unpinned = [i for i in survivors if not i.pinned]
    live = [i for i in items if not i.pinned and not is_expired(policy, i.created_at, False, NOW)]
    if cap is None:
        assert len(unpinned) == len(live)  # only expired items go
    else:
        assert len(unpinned) == min(cap, len(live))  # no more evicted than needed


@given(st.integers(0, 10), item_sets())
def test_capacity_keeps_the_newest_and_lru_the_most_recently_used(
    cap: int, items: list[ItemStats]
) -> None:
    unpinned = [i for i in items if not i.pinned]
    kept = set(unpinned) - {
        i for i in unpinned if i.id in choose_victims(Capacity(cap), items, NOW)
    }
    newest = sorted(unpinned, key=lambda i: (i.created_at, i.seq))[len(unpinned) - len(kept) :]
    assert kept == set(newest)
    lru_victims = set(choose_victims(Lru(cap), items, NOW))
    kept_lru = [i for i in unpinned if i.id not in lru_victims]
    gone = [i for i in unpinned if i.id in lru_victims]
    if kept_lru and gone:
        assert max(i.access_seq for i in gone) < min(i.access_seq for i in kept_lru)


@given(item_sets())
def test_recall_value_weights_and_order(items: list[ItemStats]) -> None:
    policy = RecallBased(max_items=1)
    for item in items:
        value = recall_value(policy, item, NOW)
        assert 0.0 <= value <= math.log1p(item.recall_count) * 0.3 + 0.5 + 0.2 + 1e-9
    victims = set(choose_victims(policy, items, NOW))
    kept = [i for i in items if not i.pinned and i.id not in victims]
    for gone in (i for i in items if i.id in victims):
        for k in kept:
            assert recall_value(policy, gone, NOW) <= recall_value(policy, k, NOW)


def test_recall_value_is_the_designed_formula() -> None:
    policy = RecallBased(max_items=1, recency_half_life=100.0)
    item = ItemStats("x", NOW - 500, 1, 2, False, 3, 2.4, NOW - 100)
    expected = math.log(4) * 0.3 + 0.8 * 0.5 + 0.5 * 0.2
    assert math.isclose(recall_value(policy, item, NOW), expected)


text = st.text(alphabet=st.sampled_from("ab c,知识图谱Ωé-_1"), max_size=20)


@given(text, text)
def test_dice_is_symmetric_and_bounded(a: str, b: str) -> None:
    d = text_overlap_dice(a, b)
    assert d == text_overlap_dice(b, a)
    assert 0.0 <= d <= 1.0
    assert text_overlap_dice(a, a) == (1.0 if len(a) >= 2 else 0.0)


@given(text)
def test_tokens_are_lowercase_words_and_cjk_bigrams(s: str) -> None:
    for t in tokens(s):
        assert t and t == t.lower()
        assert all(c.isalnum() for c in t)
        if any("\u4e00" <= c <= "\u9fff" for c in t):
            assert len(t) <= 2 and all("\u4e00" <= c <= "\u9fff" for c in t)
    for k in extract_keywords(s):
        assert k in tokens(s)


@given(st.text(max_size=6), st.text(max_size=6))
def test_prefix_upper_bound_brackets_exactly_the_prefixed_strings(prefix: str, s: str) -> None:
    upper = prefix_upper_bound(prefix)
    inside = s >= prefix and (upper is None or s < upper)
    assert inside == s.startswith(prefix)


@given(policies, st.integers(0, 200), st.integers(0, 30), st.integers(0, 70))
def test_a_sweep_is_due_only_when_the_policy_can_remove_something(
    policy: EvictionPolicy, writes: int, unpinned: int, check_interval: int
) -> None:
    # One trigger for both backends. The two copies it replaces differed only
    # here: the in-memory store skipped the sweep for a policy that can evict
    # nothing, the SQLite store ran it (finding nothing). Skipping is right.
    config = EvictionConfig(policy=policy, check_interval=check_interval)
    ttl = getattr(policy, "ttl", None)
    cap = getattr(policy, "max_items", None)
    if ttl is None and cap is None:
        assert not sweep_due(config, writes, unpinned)
        return
    every_n = writes >= max(1, check_interval)
    over = cap is not None and unpinned > cap
    assert sweep_due(config, writes, unpinned) == (every_n or over)
