"""An in-memory BM25 index with the same formula as SQLite FTS5's ``bm25()``.

Documents are token lists (see :func:`._text.tokens`); scores are positive
(FTS5 returns them negated), larger is better. ``k1 = 1.2``, ``b = 0.75``,
``idf = ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, as in FTS5.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Sequence

K1 = 1.2
B = 0.75


class Bm25Index:
    """Inverted index: term → {doc id: term frequency}, plus document lengths."""

    __slots__ = ("_docs", "_lens", "_postings", "_total_len")

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = {}
        self._docs: dict[str, Counter[str]] = {}
        self._lens: dict[str, int] = {}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, doc_id: str, terms: Sequence[str]) -> None:
        """Index ``doc_id`` (replacing what it held before)."""
        self.remove(doc_id)
        counts = Counter(terms)
        self._docs[doc_id] = counts
        self._lens[doc_id] = len(terms)
        self._total_len += len(terms)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[doc_id] = tf

    def remove(self, doc_id: str) -> None:
        counts = self._docs.pop(doc_id, None)
        if counts is None:
            return
        self._total_len -= self._lens.pop(doc_id)
        for term in counts:
            posting = self._postings[term]
            del posting[doc_id]
            if not posting:
                del self._postings[term]

    def search(
        self, terms: Sequence[str], limit: int, accept: Callable[[str], bool]
    ) -> list[tuple[str, float]]:
        """The ``limit`` best accepted documents matching any term, best first
        (ties by id)."""
        n_docs = len(self._docs)
        if not n_docs or limit <= 0:
            return []
        avgdl = self._total_len / n_docs
        # Refused documents (expired, another prefix) are checked once and never scored.
        scores: dict[str, float] = {}
        refused: set[str] = set()
        for term in dict.fromkeys(terms):
            posting = self._postings.get(term)
            if not posting:
                continue
            n = len(posting)
            idf = math.log((n_docs - n + 0.5) / (n + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            lens = self._lens
            for doc_id, tf in posting.items():
                score = scores.get(doc_id)
                if score is None:
                    if doc_id in refused:
                        continue
                    if not accept(doc_id):
                        refused.add(doc_id)
                        continue
                    score = 0.0
                dl = lens[doc_id]
                scores[doc_id] = score + idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))
        return heapq.nsmallest(limit, scores.items(), key=lambda ds: (-ds[1], ds[0]))
