"""Full-text search on every backend (in memory, SQLite, PostgreSQL) against an
independent BM25 model: the top k visible hits, whatever number of expired or
other-prefix matches rank above them."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors.memory import EvictionConfig, Ttl
from tests.memory.helpers import KINDS, FakeClock, make_store

WORDS = ["alpha", "beta", "gamma", "delta"]
PREFIXES = ["a:", "b:"]

doc = st.tuples(
    st.sampled_from(PREFIXES),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    st.booleans(),  # written before the clock moves past the TTL: expired
)


def model_scores(
    docs: dict[str, tuple[list[str], bool]], terms: list[str], prefix: str
) -> dict[str, float]:
    """FTS5's bm25 (k1 1.2, b 0.75, idf floored at 1e-6) over every indexed
    document, for the visible ones inside ``prefix`` that match a term."""
    n_docs = len(docs)
    avgdl = sum(len(words) for words, _ in docs.values()) / n_docs
    scores: dict[str, float] = {}
    for term in dict.fromkeys(terms):
        n = sum(term in words for words, _ in docs.values())
        if not n:
            continue
        idf = max(math.log((n_docs - n + 0.5) / (n + 0.5)), 1e-6)
        for id, (words, expired) in docs.items():
            tf = words.count(term)
            if tf and not expired and id.startswith(prefix):
                dl = len(words)
                part = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
                scores[id] = scores.get(id, 0.0) + part
    return scores


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(doc, min_size=1, max_size=40),
    terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
    prefix=st.sampled_from(["", *PREFIXES]),
    limit=st.integers(min_value=1, max_value=5),
)
def test_search_returns_the_best_visible_hits_on_every_backend(
    docs: list[tuple[str, list[str], bool]], terms: list[str], prefix: str, limit: int
) -> None:
    indexed = {f"{p}{n:03d}": (words, expired) for n, (p, words, expired) in enumerate(docs)}
    model = model_scores(indexed, terms, prefix)
    best = sorted(model.values(), reverse=True)[:limit]
    for kind in KINDS:
        with tempfile.TemporaryDirectory() as tmp:
            clock = FakeClock()
            eviction = EvictionConfig(policy=Ttl(ttl=60.0), check_interval=10**6)
            store = make_store(kind, Path(tmp), clock, eviction)
            try:
                for old in (True, False):
                    with store.batch():
                        for id, (words, expired) in indexed.items():
                            if expired is old:
                                store.put(id, "x", index_text=" ".join(words))
                    clock.advance(120 if old else 0)  # the first ones expire, unswept
                found = store.search(terms, prefix=prefix, limit=limit)
            finally:
                store.close()
        assert len(found) == len(best), kind
        for id, score in found:
            assert id in model and math.isclose(score, model[id], rel_tol=1e-6), (kind, id)
        scores = sorted((s for _, s in found), reverse=True)
        assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(scores, best, strict=True))
