"""Memory on PostgreSQL against SQLite: BM25 top-10 over the same 100,000 pages, same run.

One run:

- takes the cached SQLite corpus of ``benchmarks/memory.py`` (built on first use: the
  same deterministic pages), and copies it once into a PostgreSQL schema of its own
  (``bench_memory_v<version>_<pages>``, kept between runs: ``--rebuild`` makes it
  again). The copy goes by ``COPY`` straight into the backend's tables (items, postings,
  term counts, totals), which is what ``PostgresBackend.put`` writes page by page, only
  faster; the run checks that it is: the scores of every query agree;
- times the same queries (two or three mid-frequency words each) as the raw store search
  (``search(terms, prefix, limit=10)``) and as the full ``MemoryRetriever`` in BM25 mode
  (pages fetched and decoded) on both backends, warm, one after the other;
- prints the medians, p95s and the ratio PostgreSQL / SQLite (the goal: within 3x).

The server: ``--url`` (default ``AGCORE_BENCH_POSTGRES_URL``, else
``postgresql://root@127.0.0.1:5432/test``), on this machine over TCP; the figures include
the round trip. Run from the repository root::

    python benchmarks/memory_postgres.py            # 100,000 pages
    python benchmarks/memory_postgres.py --quick    # 2,000 pages, a few seconds
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sqlite3
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the corpus lives beside this script

from memory import KNOWLEDGE_PREFIX, Corpus, corpus_db, summary  # noqa: E402

from agcore_actors.memory import RetrievalMode, RetrieverConfig  # noqa: E402
from agcore_actors.memory._text import query_terms  # noqa: E402
from agcore_actors.memory.lowlevel import (  # noqa: E402
    MemoryBackend,
    MemoryRetriever,
    PostgresBackend,
    SqliteBackend,
)

BENCH_VERSION = 2
GOAL = 3.0


def with_schema(url: str, schema: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def postgres_corpus(url: str, schema: str, sqlite_path: Path, rebuild: bool) -> str:
    """The URL of the schema holding the corpus, copied from the SQLite file once."""
    import psycopg

    target = with_schema(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        if rebuild:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    PostgresBackend(target).close()  # the tables, at the current schema version
    with psycopg.connect(target, autocommit=True) as conn:
        done = conn.execute("SELECT value FROM memory_meta WHERE name = 'bench_pages'").fetchone()
        if done is not None:
            return target
        print(f"copying the corpus into PostgreSQL schema {schema} (once) ...", flush=True)
        start = time.perf_counter()
        src = sqlite3.connect(sqlite_path)
        rows = src.execute(
            "SELECT i.id, i.content, i.metadata, i.created_at, i.pinned, f.body FROM items i "
            "LEFT JOIN items_fts f ON f.rowid = i.n ORDER BY i.seq"
        )
        docs = tokens = 0
        df: Counter[str] = Counter()
        # Two connections: one COPY at a time per connection (psycopg).
        # Each truncates what it copies into, and neither waits long for a lock.
        with psycopg.connect(target) as side, conn.transaction():
            for c in (conn, side):
                c.execute("SET lock_timeout = '10s'")
            side.execute("TRUNCATE memory_postings")
            conn.execute("TRUNCATE memory_items, memory_terms")
            with (
                conn.cursor().copy(
                    "COPY memory_items (n, id, content, metadata, created_at, seq, pinned, "
                    "accessed_at, access_seq, last_used, dl) FROM STDIN"
                ) as items,
                side.cursor().copy("COPY memory_postings (term, n, tf, dl) FROM STDIN") as posts,
            ):
                for n, (id, content, meta, created, pinned, body) in enumerate(rows, 1):
                    words = None if body is None else body.split()
                    dl = None if words is None else len(words)
                    seqs = (2 * n - 1, bool(pinned), created, 2 * n, created)
                    items.write_row((n, id, content, meta, created, *seqs, dl))
                    if words is not None:
                        docs += 1
                        tokens += len(words)
                        for term, tf in Counter(words).items():
                            posts.write_row((term, n, tf, dl))
                            df[term] += 1
            side.commit()
            with conn.cursor().copy("COPY memory_terms (term, df) FROM STDIN") as terms:
                for term, count in df.items():
                    terms.write_row((term, count))
            conn.execute("SELECT setval('memory_seq', (SELECT 2 * count(*) FROM memory_items))")
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('memory_items', 'n'), "
                "(SELECT max(n) FROM memory_items))"
            )
            conn.execute(
                "UPDATE memory_meta SET value = CASE name WHEN 'docs' THEN %s ELSE %s END "
                "WHERE name IN ('docs', 'tokens')",
                (docs, tokens),
            )
            conn.execute(
                "UPDATE memory_meta SET value = "
                "(SELECT count(*) FROM memory_items WHERE NOT pinned) WHERE name = 'unpinned'"
            )
            conn.execute(
                "INSERT INTO memory_meta (name, value) VALUES ('bench_pages', %s)", (docs,)
            )
        src.close()
        conn.execute("VACUUM ANALYZE")
        print(f"copied in {time.perf_counter() - start:.1f} s", flush=True)
    return target


def top10(store: MemoryBackend, query: str) -> list[tuple[str, float]]:
    """The raw store search a retrieval starts with."""
    return store.search(query_terms(query), prefix=KNOWLEDGE_PREFIX, limit=10)


def per_query(fn: Callable[[str], object], queries: Sequence[str]) -> list[float]:
    samples = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def agreement(a: MemoryBackend, b: MemoryBackend, queries: Sequence[str]) -> int:
    """How many queries get the same top-10 scores (to 1e-9 relative) from both."""
    same = 0
    for q in queries:
        terms = query_terms(q)
        x = [s for _, s in a.search(terms, prefix=KNOWLEDGE_PREFIX, limit=10)]
        y = [s for _, s in b.search(terms, prefix=KNOWLEDGE_PREFIX, limit=10)]
        close = (math.isclose(p, r, rel_tol=1e-9) for p, r in zip(x, y, strict=True))
        same += len(x) == len(y) and all(close)
    return same


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2,000 pages (smoke test)")
    parser.add_argument("--pages", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument(
        "--url",
        default=os.environ.get(
            "AGCORE_BENCH_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument("--schema", default=None, help="the PostgreSQL schema of the corpus")
    parser.add_argument("--rebuild", action="store_true", help="copy the corpus again")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "agcore-memory-bench",
        help="where benchmarks/memory.py keeps its SQLite corpus",
    )
    args = parser.parse_args(argv)
    pages = args.pages or (2_000 if args.quick else 100_000)
    n_queries = args.queries or (20 if args.quick else 200)
    schema = args.schema or f"bench_memory_v{BENCH_VERSION}_{pages}"
    sqlite_path = corpus_db(pages, args.cache_dir)
    url = postgres_corpus(args.url, schema, sqlite_path, args.rebuild)
    queries = Corpus().queries(n_queries)
    stores: dict[str, Any] = {
        "SQLite": SqliteBackend(sqlite_path, synchronous="NORMAL"),
        "PostgreSQL": PostgresBackend(url),
    }
    import psycopg

    with psycopg.connect(args.url) as conn:
        server = conn.execute("SHOW server_version").fetchall()[0][0]
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"PostgreSQL {server}, {os.cpu_count()} cpus, {platform.machine()}, "
        f"load average {os.getloadavg()[0]:.1f} at start (a shared machine: compare the "
        "two columns of one run, not runs)"
    )
    try:
        same = agreement(stores["SQLite"], stores["PostgreSQL"], queries)
        rows: dict[str, dict[str, list[float]]] = {}
        for name, store in stores.items():
            for q in queries[:10]:  # warm caches, as a long-running process would be
                store.search(query_terms(q), prefix=KNOWLEDGE_PREFIX, limit=10)
            retriever = MemoryRetriever(
                store, RetrieverConfig(mode=RetrievalMode.BM25, max_results=10, min_score=0.0)
            )
            rows[name] = {
                "raw": per_query(partial(top10, store), queries),
                "retriever": per_query(retriever.retrieve, queries),
            }
    finally:
        for store in stores.values():
            store.close()
    print(f"\nBM25 top-10 over {pages:,} pages, {n_queries} queries (ms)\n")
    print("| search | SQLite median | SQLite p95 | PostgreSQL median | PostgreSQL p95 | ratio |")
    print("|---|---|---|---|---|---|")
    labels = {"raw": "store search (ids, scores)", "retriever": "MemoryRetriever bm25 (pages)"}
    ratio = 0.0
    for key, label in labels.items():
        s_med, s_p95 = summary(rows["SQLite"][key])
        p_med, p_p95 = summary(rows["PostgreSQL"][key])
        if key == "raw":
            ratio = p_med / s_med
        print(
            f"| {label} | {s_med:.2f} | {s_p95:.2f} | {p_med:.2f} | {p_p95:.2f} "
            f"| {p_med / s_med:.2f}x |"
        )
    print(
        f"\nSame top-10 scores on both backends: {same} of {len(queries)} queries. "
        f"Median ratio of the store search: {ratio:.2f}x (goal: within {GOAL:.0f}x: "
        f"{'met' if ratio <= GOAL else 'NOT met'})."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
