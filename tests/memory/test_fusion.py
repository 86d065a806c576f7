"""The fusion rule of BM25 with embedding similarity (``memory/_fusion.py``), checked
with hypothesis against a model written from its documented formula, and for the
properties retrieval relies on."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.memory.policy import fuse_scores

BM25 = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
SIM = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
WEIGHT = st.floats(min_value=0.0, max_value=1.0)
CANDIDATES = st.lists(st.tuples(BM25, SIM), max_size=30)


def model(pairs: list[tuple[float, float]], weight: float) -> list[float]:
    """The documented formula, computed another way (max-normalised, negatives as 0)."""
    if not pairs:
        return []
    best_b = max(b for b, _ in pairs)
    best_s = max(max(s, 0.0) for _, s in pairs)
    out = []
    for b, s in pairs:
        lex = 0.0 if best_b == 0 else b / best_b
        sem = 0.0 if best_s == 0 else max(s, 0.0) / best_s
        out.append(lex * (1 - weight) + sem * weight)
    return out


@given(CANDIDATES, WEIGHT)
def test_fused_scores_follow_the_documented_formula(
    pairs: list[tuple[float, float]], weight: float
) -> None:
    got = fuse_scores([b for b, _ in pairs], [s for _, s in pairs], weight)
    want = model(pairs, weight)
    assert len(got) == len(pairs)
    pairs_of = zip(got, want, strict=True)
    assert all(math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-12) for g, w in pairs_of)


@given(CANDIDATES, WEIGHT)
def test_every_fused_score_is_within_0_and_1(
    pairs: list[tuple[float, float]], weight: float
) -> None:
    got = fuse_scores([b for b, _ in pairs], [s for _, s in pairs], weight)
    assert all(0.0 <= g <= 1.0 for g in got)


@given(CANDIDATES, WEIGHT)
def test_a_candidate_better_on_both_counts_never_scores_lower(
    pairs: list[tuple[float, float]], weight: float
) -> None:
    got = fuse_scores([b for b, _ in pairs], [s for _, s in pairs], weight)
    for (bi, si), gi in zip(pairs, got, strict=True):
        for (bj, sj), gj in zip(pairs, got, strict=True):
            if bi >= bj and si >= sj:
                assert gi >= gj


@given(CANDIDATES, WEIGHT, st.randoms())
def test_a_candidates_score_does_not_depend_on_the_order(
    pairs: list[tuple[float, float]], weight: float, rnd: object
) -> None:
    import random

    assert isinstance(rnd, random.Random)
    shuffled = list(range(len(pairs)))
    rnd.shuffle(shuffled)
    got = fuse_scores([b for b, _ in pairs], [s for _, s in pairs], weight)
    again = fuse_scores([pairs[i][0] for i in shuffled], [pairs[i][1] for i in shuffled], weight)
    assert [got[i] for i in shuffled] == again


@given(CANDIDATES)
def test_weight_0_is_bm25_order_and_weight_1_similarity_order(
    pairs: list[tuple[float, float]],
) -> None:
    bm25 = [b for b, _ in pairs]
    sims = [s for _, s in pairs]
    lexical = fuse_scores(bm25, sims, 0.0)
    semantic = fuse_scores(bm25, sims, 1.0)
    for i in range(len(pairs)):
        for j in range(len(pairs)):
            if bm25[i] > bm25[j]:
                assert lexical[i] >= lexical[j]
            if max(sims[i], 0.0) > max(sims[j], 0.0):
                assert semantic[i] >= semantic[j]


@pytest.mark.parametrize(
    "bm25, sims, weight",
    [([1.0], [0.5, 0.2], 0.5), ([1.0], [0.5], 1.5), ([-1.0], [0.5], 0.5), ([1.0], [0.5], math.nan)],
)
def test_bad_input_is_refused(bm25: list[float], sims: list[float], weight: float) -> None:
    with pytest.raises(ValueError):
        fuse_scores(bm25, sims, weight)
