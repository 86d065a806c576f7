"""Costs that must not grow with the store: a put at capacity under every policy,
opening a file, writing a page whose id prefixes many others.

Each test times the same operation on a small and a 16 times larger store and
requires the larger one to cost at most 3 times as much (a full scan costs about
16 times as much).
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    EvictionPolicy,
    Hybrid,
    KnowledgePage,
    Lru,
    RecallBased,
    Ttl,
)
from agcore_actors.memory.lowlevel import (
    InMemoryBackend,
    KnowledgeStore,
    MemoryBackend,
    SqliteBackend,
)
from tests.memory.helpers import FakeClock

pytestmark = [pytest.mark.slow, pytest.mark.exclusive]

SMALL, LARGE = 1_000, 16_000
MAX_RATIO = 3.0


def make_store(
    kind: str, path: Path, clock: FakeClock, eviction: EvictionConfig | None = None
) -> MemoryBackend:
    # NORMAL: an fsync per put would time the disk, not the store.
    if kind == "memory":
        return InMemoryBackend(eviction, clock=clock)
    return SqliteBackend(path / "memory.db", eviction, clock=clock, synchronous="NORMAL")


def cost_us(op: Callable[[int], object], n: int, *, amortised: bool = False) -> float:
    """µs per call: the best of three rounds of ``n`` calls, each round's median
    (or, ``amortised``, its mean without the slowest 1%: a sweep every 64 writes
    stays in). A busy machine slows single rounds, rarely all three."""
    rounds = []
    for r in range(3):
        samples = []
        for i in range(n):
            start = time.perf_counter()
            op(r * n + i)
            samples.append(time.perf_counter() - start)
        samples.sort()
        if amortised:
            rounds.append(statistics.fmean(samples[: len(samples) - len(samples) // 100]))
        else:
            rounds.append(statistics.median(samples))
    return min(rounds) * 1e6


def fill(store: MemoryBackend, clock: FakeClock, n: int) -> None:
    with store.batch():
        for i in range(n):
            clock.advance(0.001)
            store.put(f"item:{i:07d}", "x" * 100)
            if i % 7 == 0:
                store.record_recall(f"item:{i:07d}", 0.5)


def put_cost(kind: str, tmp_path: Path, policy: EvictionPolicy, size: int) -> float:
    clock = FakeClock()
    store = make_store(kind, tmp_path / f"{size}", clock, EvictionConfig(policy=policy))
    try:
        fill(store, clock, size)

        def put(i: int) -> None:
            clock.advance(0.001)
            store.put(f"new:{i:07d}", "y" * 100)

        put(-1)  # warm up (the first sweep, the first index read)
        return cost_us(put, 640, amortised=True)
    finally:
        store.close()


POLICIES: list[tuple[str, Callable[[int], EvictionPolicy]]] = [
    ("capacity", lambda n: Capacity(max_items=n)),
    ("lru", lambda n: Lru(max_items=n)),
    ("recall", lambda n: RecallBased(max_items=n)),
    ("hybrid", lambda n: Hybrid(ttl=3600.0, max_items=n)),
    ("ttl", lambda n: Ttl(ttl=3600.0)),
]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("name, policy", POLICIES, ids=[p[0] for p in POLICIES])
def test_a_put_at_capacity_costs_the_same_in_a_larger_store(
    kind: str, name: str, policy: Callable[[int], EvictionPolicy], tmp_path: Path
) -> None:
    (tmp_path / f"{SMALL}").mkdir()
    (tmp_path / f"{LARGE}").mkdir()
    small = put_cost(kind, tmp_path, policy(SMALL), SMALL)
    large = put_cost(kind, tmp_path, policy(LARGE), LARGE)
    assert large <= MAX_RATIO * small, f"{kind}/{name}: {small:.1f} µs -> {large:.1f} µs"


def open_cost(path: Path, rows: int) -> float:
    SqliteBackend(path).close()  # create the schema
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (id, content, created_at, seq, pinned, accessed_at, access_seq, "
        "last_used) VALUES (?, 'x', ?, ?, 0, 0, ?, ?)",
        ((f"i{n:08d}", float(n), 2 * n, 2 * n + 1, float(n)) for n in range(rows)),
    )
    conn.execute("UPDATE meta SET value = ? WHERE name = 'unpinned'", (rows,))
    conn.execute("UPDATE meta SET value = ? WHERE name = 'seq'", (2 * rows + 1,))
    conn.execute("COMMIT")
    conn.close()
    SqliteBackend(path).close()  # warm the page cache
    return cost_us(lambda _: SqliteBackend(path).close(), 20)


def test_opening_a_file_does_not_scan_it(tmp_path: Path) -> None:
    small = open_cost(tmp_path / "small.db", 10_000)
    large = open_cost(tmp_path / "large.db", 16 * 10_000)
    assert large <= MAX_RATIO * small, f"{small:.0f} µs -> {large:.0f} µs"


def page_cost(kind: str, tmp_path: Path, size: int) -> float:
    clock = FakeClock()
    store = make_store(kind, tmp_path / f"{size}", clock)
    knowledge = KnowledgeStore(store)
    try:
        with store.batch():
            for n in range(size):
                knowledge.add_page(KnowledgePage(id=f"p{n}", title="t"))
        return cost_us(lambda _: knowledge.add_page(KnowledgePage(id="p1", title="t")), 50)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_writing_a_page_whose_id_prefixes_many_costs_the_same(kind: str, tmp_path: Path) -> None:
    (tmp_path / f"{SMALL}").mkdir()
    (tmp_path / f"{LARGE}").mkdir()
    small = page_cost(kind, tmp_path, SMALL)
    large = page_cost(kind, tmp_path, LARGE)
    assert large <= MAX_RATIO * small, f"{kind}: {small:.1f} µs -> {large:.1f} µs"
