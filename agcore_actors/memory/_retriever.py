"""MemoryRetriever: keyword (Dice), BM25 and hybrid retrieval of knowledge pages.

Modes (:class:`RetrievalMode`):

- ``DICE`` — keywords (:func:`extract_keywords`) find candidate pages by
  case-insensitive substring (title, summary, tags and content), each
  candidate is scored with :func:`text_overlap_score` on the *whole* query, scores below
  ``min_score`` are dropped (inclusive bound), the rest sorted best first
  (stable: ties keep discovery order) and cut to ``max_results``. It scans
  every page: fine for hundreds of pages, slow for 100,000.
- ``BM25`` — the full-text index (FTS5 in SQLite, :mod:`._bm25` in memory)
  ranks pages; a page's score is its BM25 score divided by the best one's,
  so the top hit scores 1.0 and ``min_score`` drops weak tails.
- ``HYBRID`` (the default) — BM25 picks
  ``candidates`` pages, each scored
  ``bm25_weight·(bm25 / best) + dice_weight·text_overlap_score``.
- ``BM25_EMBEDDINGS`` — BM25 picks ``candidates`` pages, each scored by
  :func:`._fusion.fuse_scores` of its BM25 score and the cosine similarity of the
  query with the page, which the retriever's :class:`Embedder` (the ``embeddings``
  extra) computes at query time (its cache keeps the vectors of pages seen before).
  Nothing is stored beside the pages, so every backend and every host ranks alike.
  Without an embedder this mode is refused (:class:`InvalidInput`).

Every page returned is counted as recalled with its score (the statistics
recall-based eviction uses).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from .._validators import non_negative
from ._embeddings import Embedder
from ._errors import InvalidInput
from ._fusion import fuse_scores
from ._item import KnowledgePage, RetrievalResult, ScoredPage
from ._knowledge import KNOWLEDGE_PREFIX, KnowledgeStore, decode_page
from ._store import MemoryBackend
from ._text import (
    DEFAULT_STOP_WORDS,
    extract_keywords,
    matches_any,
    query_terms,
    text_overlap_score,
)


class RetrievalMode(enum.Enum):
    DICE = "dice"
    BM25 = "bm25"
    HYBRID = "hybrid"
    BM25_EMBEDDINGS = "bm25_embeddings"


def _unit(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be within [0, 1], not {value!r}")


@attrs.frozen(kw_only=True)
class RetrieverConfig:
    """Retrieval settings."""

    #: At most this many pages per retrieval.
    max_results: int = attrs.field(default=20, validator=non_negative)
    #: Pages scoring below this (in [0, 1]) are dropped.
    min_score: float = attrs.field(default=0.1, validator=_unit)
    #: How pages are found and scored (see :class:`RetrievalMode`).
    mode: RetrievalMode = RetrievalMode.HYBRID
    #: Hybrid: the weight of the normalised BM25 score.
    bm25_weight: float = attrs.field(default=0.5, validator=non_negative)
    #: Hybrid: the weight of the Dice score.
    dice_weight: float = attrs.field(default=0.5, validator=non_negative)
    #: How many BM25 hits the hybrid modes rescore (at least ``max_results``).
    candidates: int = attrs.field(default=50, validator=non_negative)
    #: BM25_EMBEDDINGS: the weight of embedding similarity (BM25 has the rest).
    embedding_weight: float = attrs.field(default=0.5, validator=_unit)


def _rank(scored: list[tuple[KnowledgePage, float]], config: RetrieverConfig) -> list[ScoredPage]:
    kept = [(p, s) for p, s in scored if s >= config.min_score]
    kept.sort(key=lambda ps: -ps[1])  # stable: ties keep discovery order
    return [ScoredPage(page=p, score=s) for p, s in kept[: config.max_results]]


class MemoryRetriever:
    """Retrieval over the knowledge pages of a store (synchronous).

    ``embedder`` is what the ``BM25_EMBEDDINGS`` mode needs (None: that mode is
    refused with :class:`InvalidInput`).
    """

    def __init__(
        self,
        store: MemoryBackend,
        config: RetrieverConfig | None = None,
        *,
        stop_words: frozenset[str] = DEFAULT_STOP_WORDS,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.knowledge = KnowledgeStore(store)
        self.config = config or RetrieverConfig()
        self.stop_words = stop_words
        self.embedder = embedder

    def retrieve(self, query: str, config: RetrieverConfig | None = None) -> RetrievalResult:
        """The pages that answer ``query``, best first (see the module doc)."""
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        cfg = config or self.config
        if cfg.mode is RetrievalMode.BM25_EMBEDDINGS and self.embedder is None:
            raise InvalidInput(
                "retrieval mode 'bm25_embeddings' needs an embedder"
                " (MemoryStoreConfig.embedder, the 'embeddings' extra)"
            )
        if not query.strip() or cfg.max_results == 0:
            return RetrievalResult(items=[], query=query)
        items = self._dice(query, cfg) if cfg.mode is RetrievalMode.DICE else self._bm25(query, cfg)
        # Recall statistics are buffered by the store (no commit per query).
        for item in items:
            self.store.record_recall(KNOWLEDGE_PREFIX + item.page.id, item.score)
        return RetrievalResult(items=items, query=query)

    def _dice(self, query: str, cfg: RetrieverConfig) -> list[ScoredPage]:
        keywords = extract_keywords(query, self.stop_words)
        if not keywords:
            return []
        found: list[tuple[int, int, KnowledgePage]] = []
        for position, page in enumerate(self.knowledge.pages()):
            first = matches_any(page, keywords)
            if first is not None:
                found.append((first, position, page))
        found.sort(key=lambda f: (f[0], f[1]))  # first matching keyword, then index order
        return _rank([(p, text_overlap_score(query, p)) for _, _, p in found], cfg)

    def _bm25(self, query: str, cfg: RetrieverConfig) -> list[ScoredPage]:
        terms = query_terms(query, self.stop_words)
        if not terms:
            return []
        hybrid = cfg.mode is RetrievalMode.HYBRID
        fused = cfg.mode is RetrievalMode.BM25_EMBEDDINGS
        wide = hybrid or fused
        limit = max(cfg.candidates, cfg.max_results) if wide else cfg.max_results
        hits = self.store.search(terms, prefix=KNOWLEDGE_PREFIX, limit=limit)
        if not hits:
            return []
        best = hits[0][1] or 1.0
        scored: list[tuple[KnowledgePage, float]] = []
        raws: list[float] = []
        for key, raw in hits:
            item = self.store.get(key)
            if item is None:
                continue
            page = decode_page(item)
            score = raw / best
            if hybrid:
                score = cfg.bm25_weight * score + cfg.dice_weight * text_overlap_score(query, page)
            scored.append((page, score))
            raws.append(max(raw, 0.0))
        if fused and scored:
            assert self.embedder is not None  # checked in retrieve()
            sims = self.embedder.similarities(query, [page_text(p) for p, _ in scored])
            fused_scores = fuse_scores(raws, sims, cfg.embedding_weight)
            scored = [(p, f) for (p, _), f in zip(scored, fused_scores, strict=True)]
        return _rank(scored, cfg)


def page_text(page: KnowledgePage) -> str:
    """What an embedder reads of a page: title, summary, tags and content."""
    return "\n".join([page.title, page.summary, " ".join(page.tags), page.content])
