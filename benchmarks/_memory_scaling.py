"""The scaling part of ``benchmarks/memory.py``: costs that must not grow with the store.

At two sizes, on both backends: a put at capacity under every eviction policy (each put
evicts one item; SQLite with ``synchronous=NORMAL``, so that the figure is the store's and
not the disk's fsync), a top-10 search behind expired matching items, and writing page
``p1`` among that many pages. Figures are mean µs per call with the slowest 1 % left out.
"""

from __future__ import annotations

import functools
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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


class StepClock:
    """A clock the benchmark moves by hand: one millisecond a write."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def make(
    kind: str, path: Path, clock: StepClock, policy: EvictionPolicy, check_interval: int = 64
) -> MemoryBackend:
    eviction = EvictionConfig(policy=policy, check_interval=check_interval, sweep_interval=None)
    if kind == "memory":
        return InMemoryBackend(eviction, clock=clock)
    return SqliteBackend(path, eviction, clock=clock, synchronous="NORMAL")


def fill(store: MemoryBackend, clock: StepClock, n: int, prefix: str = "item") -> None:
    for chunk in range(0, n, 5_000):
        with store.batch():
            for i in range(chunk, min(n, chunk + 5_000)):
                clock.now += 0.001
                store.put(f"{prefix}:{i:07d}", "x" * 100)
                if i % 7 == 0:
                    store.record_recall(f"{prefix}:{i:07d}", 0.5)


def amortised_us(op: Callable[[int], object], n: int) -> float:
    """Mean µs per call, the slowest 1% left out (machine pauses; sweeps stay in)."""
    gc.collect()  # start each figure from a clean heap
    samples = []
    for i in range(n):
        start = time.perf_counter()
        op(i)
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.fmean(samples[: len(samples) - len(samples) // 100]) * 1e6


POLICIES: list[tuple[str, Callable[[int], EvictionPolicy]]] = [
    ("Capacity", lambda n: Capacity(max_items=n)),
    ("Lru", lambda n: Lru(max_items=n)),
    ("RecallBased", lambda n: RecallBased(max_items=n)),
    ("Hybrid (TTL 1 h)", lambda n: Hybrid(ttl=3600.0, max_items=n)),
    ("Ttl 1 h (sweep every 64 writes)", lambda n: Ttl(ttl=3600.0)),
]


def put_at_capacity(kind: str, policy: EvictionPolicy, size: int, tmp: Path) -> float:
    clock = StepClock()
    store = make(kind, tmp / f"cap-{kind}-{size}-{type(policy).__name__}.db", clock, policy)
    try:
        fill(store, clock, size)

        def put(i: int) -> None:
            clock.now += 0.001
            store.put(f"new:{i:07d}", "y" * 100)

        return amortised_us(put, 1_280)
    finally:
        store.close()


def put_at_capacity_of(
    policy: Callable[[int], EvictionPolicy], kind: str, size: int, *, tmp: Path
) -> float:
    return put_at_capacity(kind, policy(size), size, tmp)


def search_behind_expired(kind: str, size: int, expired: int, tmp: Path) -> float:
    clock = StepClock()
    # No sweep before the search: the expired matches are all still there.
    store = make(kind, tmp / f"search-{kind}-{size}.db", clock, Ttl(ttl=3600.0), 10**9)
    try:
        with store.batch():
            for i in range(expired):
                store.put(f"old:{i:07d}", "x", index_text="needle common words")
        clock.now += 7200.0  # all of them expired, none swept yet
        fill(store, clock, size)
        with store.batch():
            for i in range(10):
                store.put(f"live:{i:02d}", "x", index_text="needle other words here")
        return amortised_us(lambda _: store.search(["needle"], limit=10), 50)
    finally:
        store.close()


def page_among(kind: str, size: int, tmp: Path) -> float:
    clock = StepClock()
    store = make(kind, tmp / f"pages-{kind}-{size}.db", clock, Ttl(ttl=1e9))
    knowledge = KnowledgeStore(store)
    try:
        for chunk in range(0, size, 5_000):
            with store.batch():
                for n in range(chunk, min(size, chunk + 5_000)):
                    knowledge.add_page(KnowledgePage(id=f"p{n}", title="t"))
        return amortised_us(lambda _: knowledge.add_page(KnowledgePage(id="p1", title="t")), 200)
    finally:
        store.close()


def scaling_table(sizes: tuple[int, int], expired: int) -> list[str]:
    small, large = sizes
    rows = []
    with tempfile.TemporaryDirectory(prefix="agcore-memory-scaling") as tmp_name:
        tmp = Path(tmp_name)
        cases: list[tuple[str, Callable[[str, int], float]]] = [
            (f"put at capacity, {name}", functools.partial(put_at_capacity_of, policy, tmp=tmp))
            for name, policy in POLICIES
        ]
        cases.append(
            (
                f"top-10 search behind {expired:,} expired matches",
                lambda k, n: search_behind_expired(k, n, expired, tmp),
            )
        )
        cases.append(("add_page('p1') among the pages", lambda k, n: page_among(k, n, tmp)))
        for label, run in cases:
            for kind in ("memory", "sqlite"):
                a, b = run(kind, small), run(kind, large)
                backend = "InMemoryBackend" if kind == "memory" else "SqliteBackend"
                rows.append(f"| {label} | {backend} | {a:,.1f} | {b:,.1f} | {b / a:.2f} |")
    return rows
