"""Fusion of BM25 with embedding similarity: a pure policy (no I/O, no model).

:func:`fuse_scores` scores each BM25 candidate of a query
``(1 - weight)·(bm25 / best bm25) + weight·(similarity / best similarity)``, where a
similarity (cosine, in [-1, 1]) counts from 0 up (a negative one is 0) and "best" is
the largest among the candidates (a best of 0 leaves that term 0). So:

- every score is in [0, 1]; a candidate best on both counts scores 1;
- ``weight = 0`` is BM25 alone and ``weight = 1`` embedding similarity alone;
- a candidate at least as good as another on both counts scores at least as high,
  and a candidate's score does not depend on the order the candidates come in.

Normalising each side by its best keeps the two on one scale whatever the model's
range of cosines (a static-embedding model puts related texts at 0.3 and unrelated
ones near 0); ``retrieval_embeddings.py`` measured it against reciprocal-rank fusion.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["fuse_scores"]


def fuse_scores(bm25: Sequence[float], similarity: Sequence[float], weight: float) -> list[float]:
    """The fused score of each candidate (see the module doc), in the input order.

    ``bm25`` (scores >= 0) and ``similarity`` have one entry per candidate;
    ``weight`` is in [0, 1]. Raises ValueError otherwise.
    """
    if len(bm25) != len(similarity):
        raise ValueError("bm25 and similarity need one score per candidate each")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be within [0, 1], not {weight!r}")
    if any(not s >= 0.0 for s in bm25):
        raise ValueError("BM25 scores must be >= 0")
    sims = [s if s > 0.0 else 0.0 for s in similarity]  # NaN too becomes 0
    best_bm25 = max(bm25, default=0.0)
    best_sim = max(sims, default=0.0)
    fused: list[float] = []
    for b, s in zip(bm25, sims, strict=True):
        lexical = b / best_bm25 if best_bm25 > 0.0 else 0.0
        semantic = s / best_sim if best_sim > 0.0 else 0.0
        fused.append(min(1.0, (1.0 - weight) * lexical + weight * semantic))
    return fused
