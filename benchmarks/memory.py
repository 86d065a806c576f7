"""Memory benchmark: costs that must not grow with the store, BM25 (FTS5) retrieval
against the Dice scan, and store throughput.

One run measures:

- at 10,000 and 100,000 items (``--sizes``): a put at capacity under every eviction
  policy on both backends (each put evicts one item; SQLite with
  ``synchronous=NORMAL``, so that the figure is the store's and not the disk's
  fsync), a top-10 search behind 20,000 expired matching items, and writing page
  ``p1`` among that many pages (its id prefixes a tenth of them); the ratio column
  is the larger size's cost over the smaller's;
- opening a file of 200,000 and of 2,000,000 rows (built once, cached);
- top-10 retrieval over a corpus of knowledge pages (100,000 by default) in a SQLite
  store: the raw FTS5/BM25 query, the full ``MemoryRetriever`` in BM25 and hybrid mode
  (pages fetched and decoded), and the seed's Dice keyword scan (every page decoded and
  scored; only a few queries, it takes seconds each);
- put/get throughput of the in-memory store and the SQLite store (one transaction per
  put with ``synchronous=FULL`` and ``NORMAL``, and puts batched 1,000 per transaction);
- through the ``MemoryStore`` actor on SQLite: how long a ``Get`` takes while a
  ``PutPage`` of a 4 MB page (20,000 lines to index) is being written, against the same
  ``Get`` idle and the write's own duration (a read must not wait for a write in progress).

The corpus is generated deterministically (seeded RNG: a vocabulary of pseudo-words,
Zipf-distributed word frequencies) and cached as a SQLite file under the system temp
directory, so only the first run pays for building it.

Run from the repository root::

    python benchmarks/memory.py            # full run (first run builds the corpus)
    python benchmarks/memory.py --quick    # smoke test: small sizes, a few seconds
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.memory import (
    EvictionConfig,
    KnowledgePage,
    MemoryStoreConfig,
    RetrievalMode,
    RetrieverConfig,
    memory_store_spec,
)
from agcore_actors.memory._text import query_terms
from agcore_actors.memory.lowlevel import (
    InMemoryBackend,
    KnowledgeStore,
    MemoryBackend,
    MemoryRetriever,
    SqliteBackend,
)
from agcore_actors.memory.messages import Get, Put, PutPage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the scaling cases live beside this script

from _memory_scaling import scaling_table  # noqa: E402

CORPUS_VERSION = 1
SEED = 20260607
VOCABULARY = 30_000
BM25_GOAL_MS = 10.0
KNOWLEDGE_PREFIX = "knowledge_"
SCHEMA_TAG = "s3"


def vocabulary(rng: random.Random, size: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(letters) for _ in range(rng.randint(3, 10)))] = None
    return list(words)


class Corpus:
    """Deterministic pages: word i of the vocabulary has frequency ~ 1 / (i + 1)."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng, VOCABULARY)
        weights = [1.0 / (i + 1) for i in range(len(self.words))]
        total = 0.0
        self.cumulative: list[float] = []
        for w in weights:
            total += w
            self.cumulative.append(total)

    def sample(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=k)

    def page(self, n: int) -> KnowledgePage:
        r = self.rng
        return KnowledgePage(
            id=f"page{n:06d}",
            title=" ".join(self.sample(r.randint(3, 6))).capitalize(),
            summary=" ".join(self.sample(r.randint(8, 15))),
            content=" ".join(self.sample(r.randint(40, 80))),
            tags=self.sample(r.randint(2, 4)),
            created_at=1_700_000_000.0 + n,
            updated_at=1_700_000_000.0 + n,
        )

    def queries(self, count: int) -> list[str]:
        """Two or three words from the mid-frequency band (ranks 100..5,000)."""
        r = random.Random(SEED + 1)
        band = self.words[100:5000]
        return [" ".join(r.sample(band, r.randint(2, 3))) for _ in range(count)]


def corpus_db(pages: int, cache: Path) -> Path:
    """The cached corpus file, built on first use."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"corpus-v{CORPUS_VERSION}-{SCHEMA_TAG}-{pages}.db"
    if path.exists():
        return path
    building = path.with_suffix(".building")
    for stale in cache.glob(building.name + "*"):
        stale.unlink()
    print(f"building the {pages:,}-page corpus in {path} (once) ...", flush=True)
    start = time.perf_counter()
    corpus = Corpus()
    store = SqliteBackend(building, synchronous="NORMAL")
    knowledge = KnowledgeStore(store)
    for chunk in range(0, pages, 5_000):
        with store.batch():
            for n in range(chunk, min(pages, chunk + 5_000)):
                knowledge.add_page(corpus.page(n))
    store.close()
    # Merge the FTS segments, and leave WAL mode so that the file stands alone
    # (no -wal / -shm companions) and can be renamed into place.
    conn = sqlite3.connect(building, isolation_level=None)
    try:
        conn.execute("INSERT INTO items_fts (items_fts) VALUES ('optimize')")
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    building.rename(path)
    print(f"built in {time.perf_counter() - start:.1f} s", flush=True)
    return path


def timed_ms(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return statistics.median(ordered), p95


def retrieval(pages: int, n_queries: int, n_dice: int, cache: Path) -> tuple[list[str], float]:
    path = corpus_db(pages, cache)
    corpus = Corpus()
    queries = corpus.queries(n_queries)
    store = SqliteBackend(path, synchronous="NORMAL")
    rows = []
    try:
        # Warm the page cache (and the OS cache) once, as a long-running process would be.
        for q in queries[:5]:
            store.search(query_terms(q), prefix=KNOWLEDGE_PREFIX, limit=10)

        def per_query(fn: Callable[[str], object], qs: Sequence[str]) -> list[float]:
            samples: list[float] = []
            for q in qs:
                samples.extend(timed_ms(lambda q=q: fn(q), 1))  # type: ignore[misc]
            return samples

        raw = per_query(
            lambda q: store.search(query_terms(q), prefix=KNOWLEDGE_PREFIX, limit=10), queries
        )
        modes = {}
        for mode in (RetrievalMode.BM25, RetrievalMode.HYBRID):
            r = MemoryRetriever(store, RetrieverConfig(mode=mode, max_results=10, min_score=0.0))
            modes[mode] = per_query(r.retrieve, queries)
        dice = MemoryRetriever(
            store, RetrieverConfig(mode=RetrievalMode.DICE, max_results=10, min_score=0.0)
        )
        dice_ms = per_query(dice.retrieve, queries[:n_dice])
        bm25_median = summary(raw)[0]
        rows.append(
            f"| FTS5 bm25() top-10 (raw query) | {len(raw)} | "
            + "{:.2f} | {:.2f} |".format(*summary(raw))
        )
        for mode, samples in modes.items():
            rows.append(
                f"| MemoryRetriever {mode.value} top-10 (pages decoded) | {len(samples)} | "
                + "{:.2f} | {:.2f} |".format(*summary(samples))
            )
        rows.append(
            f"| MemoryRetriever dice top-10 (seed scan) | {len(dice_ms)} | "
            + "{:.1f} | {:.1f} |".format(*summary(dice_ms))
        )
    finally:
        store.close()
    return rows, bm25_median


def throughput(kind: str, store: MemoryBackend, n: int, batch: int) -> tuple[float, float]:
    """(puts/s, gets/s) for ``n`` puts of a 200-byte item (``batch`` per transaction)."""
    payload = "x" * 200
    start = time.perf_counter()
    for chunk in range(0, n, batch):
        with store.batch():
            for i in range(chunk, min(n, chunk + batch)):
                store.put(f"item:{i:07d}", payload, {"i": i})
    puts = n / (time.perf_counter() - start)
    rng = random.Random(SEED)
    ids = [f"item:{rng.randrange(n):07d}" for _ in range(n)]
    start = time.perf_counter()
    for id in ids:
        store.get(id)
    gets = n / (time.perf_counter() - start)
    return puts, gets


def stores_table(n: int, n_fsync: int) -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="agcore-memory-bench") as tmp:
        cases: list[tuple[str, Callable[[], MemoryBackend], int, int]] = [
            ("InMemoryBackend", lambda: InMemoryBackend(EvictionConfig()), n, 1),
            (
                "SqliteBackend FULL, 1 put per transaction",
                lambda: SqliteBackend(Path(tmp) / "full.db"),
                n_fsync,
                1,
            ),
            (
                "SqliteBackend NORMAL, 1 put per transaction",
                lambda: SqliteBackend(Path(tmp) / "normal.db", synchronous="NORMAL"),
                n,
                1,
            ),
            (
                "SqliteBackend FULL, 1,000 puts per transaction",
                lambda: SqliteBackend(Path(tmp) / "batch.db"),
                n,
                1000,
            ),
        ]
        for label, make, count, batch in cases:
            store = make()
            try:
                puts, gets = throughput(label, store, count, batch)
            finally:
                store.close()
            rows.append(f"| {label} | {count:,} | {puts:,.0f} | {gets:,.0f} |")
    return rows


def open_file(rows: int, cache: Path) -> Path:
    """A cached file of ``rows`` unpinned items (written with plain SQL, once)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"open-{SCHEMA_TAG}-{rows}.db"
    if path.exists():
        return path
    building = path.with_suffix(".building")
    for stale in cache.glob(building.name + "*"):
        stale.unlink()
    SqliteBackend(building).close()
    conn = sqlite3.connect(building, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO items (id, content, created_at, seq, pinned, accessed_at, "
            "access_seq, last_used) VALUES (?, 'x', ?, ?, 0, 0, ?, ?)",
            ((f"i{n:08d}", float(n), 2 * n, 2 * n + 1, float(n)) for n in range(rows)),
        )
        conn.execute("UPDATE meta SET value = ? WHERE name = 'unpinned'", (rows,))
        conn.execute("UPDATE meta SET value = ? WHERE name = 'seq'", (2 * rows + 1,))
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    building.rename(path)
    return path


def open_table(row_counts: Sequence[int], cache: Path) -> list[str]:
    rows = []
    for count in row_counts:
        path = open_file(count, cache)
        SqliteBackend(path).close()  # the page cache warm, as at a restart
        samples = timed_ms(lambda path=path: SqliteBackend(path).close(), 20)  # type: ignore[misc]
        rows.append(f"| {count:,} | {statistics.median(samples):.2f} | {max(samples):.2f} |")
    return rows


async def read_during_write(messages: int, rounds: int) -> list[str]:
    """Medians over ``rounds``: the write, a read during it, the same read idle (ms)."""
    rng = random.Random(SEED)
    lines = [" ".join(f"w{rng.randrange(50_000)}" for _ in range(30)) for _ in range(messages)]
    content = "\n".join(lines)[: messages * 200]
    writes, idle, during = [], [], []
    with tempfile.TemporaryDirectory(prefix="agcore-memory-rw") as tmp:
        path = str(Path(tmp) / "rw.db")
        config = MemoryStoreConfig(path=path, synchronous="NORMAL")
        async with ActorSystem() as system:
            memory = await system.root.start_child(memory_store_spec("memory", config=config))
            await memory.ask(Put(id="a", content="x"))
            for r in range(rounds):
                async with trio.open_nursery() as nursery:

                    async def write(page: str) -> None:
                        start = time.perf_counter()
                        await memory.ask(
                            PutPage(KnowledgePage(id=page, title=page, content=content))
                        )
                        writes.append((time.perf_counter() - start) * 1000)

                    nursery.start_soon(write, f"knowledge_rw{r}")
                    await trio.testing.wait_all_tasks_blocked()  # the write is in its thread
                    start = time.perf_counter()
                    await memory.ask(Get("a"))
                    during.append((time.perf_counter() - start) * 1000)
                for _ in range(5):  # the same read with no write running
                    start = time.perf_counter()
                    await memory.ask(Get("a"))
                    idle.append((time.perf_counter() - start) * 1000)
    return [
        f"| `PutPage` of a {len(content) / 1e6:.1f} MB page (how long the write runs) "
        f"| {statistics.median(writes):.1f} |",
        f"| `Get` with no write running | {statistics.median(idle):.2f} |",
        f"| `Get` sent while that `PutPage` is being written | {statistics.median(during):.2f} |",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--pages", type=int, default=None)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "agcore-memory-bench",
        help="where the generated corpus is kept between runs",
    )
    parser.add_argument(
        "--sizes", type=int, nargs=2, default=None, help="the two store sizes compared"
    )
    args = parser.parse_args(argv)
    sizes = tuple(args.sizes or ((1_000, 10_000) if args.quick else (10_000, 100_000)))
    expired = 2_000 if args.quick else 20_000
    open_rows = (20_000, 200_000) if args.quick else (200_000, 2_000_000)
    pages = args.pages or (2_000 if args.quick else 100_000)
    n_queries, n_dice = (10, 2) if args.quick else (200, 3)
    n_items, n_fsync = (500, 100) if args.quick else (20_000, 2_000)

    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} cpus, {platform.machine()}, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    print(f"\nCosts at {sizes[0]:,} and {sizes[1]:,} items (µs per operation, amortised)\n")
    print(f"| operation | backend | {sizes[0]:,} | {sizes[1]:,} | ratio |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(scaling_table((sizes[0], sizes[1]), expired)), flush=True)
    print("\nOpening a store file (ms, page cache warm)\n")
    print("| rows | median ms | max ms |")
    print("|---:|---:|---:|")
    print("\n".join(open_table(open_rows, args.cache_dir)), flush=True)
    rows, bm25_median = retrieval(pages, n_queries, n_dice, args.cache_dir)
    print(f"\nTop-10 retrieval over {pages:,} knowledge pages (ms per query)\n")
    print("| method | queries | median ms | p95 ms |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print("\nStore throughput (200-byte items, random gets)\n")
    print("| store | items | puts/s | gets/s |")
    print("|---|---|---|---|")
    print("\n".join(stores_table(n_items, n_fsync)))
    print("\nA read during a write, through the MemoryStore actor on SQLite (median ms)\n")
    print("| measure | ms |")
    print("|---|---:|")
    rw = trio.run(read_during_write, 2_000 if args.quick else 20_000, 3 if args.quick else 7)
    print("\n".join(rw))
    verdict = "meets" if bm25_median <= BM25_GOAL_MS else "MISSES"
    print(f"\nBM25 top-10 median {bm25_median:.2f} ms {verdict} the {BM25_GOAL_MS:.0f} ms goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
