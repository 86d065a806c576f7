"""Stateful tests: the three stores against a plain-Python model, on virtual time.

Every eviction policy is exercised with random sequences of put / get /
delete / pin / recall / advance-time / evict (and, for SQLite and PostgreSQL,
close and reopen). After every step every store (in memory, SQLite, PostgreSQL
in a schema of its own) must show exactly the model's visible items, statistics
included.

The model is deliberately naive: it keeps a dict and runs a full sweep after
every write, which is what the stores' cheaper rules (expired items hidden at
once, capacity enforced per write, periodic TTL sweeps) must look like from
outside.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import msgspec
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    EvictionPolicy,
    Hybrid,
    Lru,
    MemoryFilter,
    MemoryItem,
    NoEviction,
    RecallBased,
    Ttl,
)
from agcore_actors.memory.lowlevel import (
    InMemoryBackend,
    MemoryBackend,
    PostgresBackend,
    SqliteBackend,
)
from tests.postgres_fixture import drop_schema, fresh_url

IDS = ["a", "b", "c", "p:x", "p:y"]


def _comparable(items: list[MemoryItem]) -> list[MemoryItem]:
    """Items with recall totals rounded: the stores add buffered recall scores
    in batches, so their float sums may differ from the model's in the last bit."""
    return [
        msgspec.structs.replace(i, recall_score_total=round(i.recall_score_total, 9)) for i in items
    ]


@dataclasses.dataclass
class ModelItem:
    id: str
    content: str
    metadata: dict[str, Any]
    created_at: float
    pinned: bool
    accessed_at: float
    access_count: int
    recall_count: int
    recall_score_total: float
    recalled_at: float | None
    seq: int = 0
    access_seq: int = 0

    def item(self) -> MemoryItem:
        return MemoryItem(
            id=self.id,
            content=self.content,
            metadata=self.metadata,
            created_at=self.created_at,
            pinned=self.pinned,
            accessed_at=self.accessed_at,
            access_count=self.access_count,
            recall_count=self.recall_count,
            recall_score_total=self.recall_score_total,
            recalled_at=self.recalled_at,
        )


class Model:
    """The specification, written for clarity, not speed."""

    def __init__(self, policy: EvictionPolicy, clock: list[float]) -> None:
        self.policy = policy
        self.clock = clock
        self.items: dict[str, ModelItem] = {}
        self.seq = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def ttl(self) -> float | None:
        return getattr(self.policy, "ttl", None)

    def cap(self) -> int | None:
        return getattr(self.policy, "max_items", None)

    def expired(self, it: ModelItem) -> bool:
        ttl = self.ttl()
        return ttl is not None and not it.pinned and it.created_at <= self.clock[0] - ttl

    def visible(self) -> list[ModelItem]:
        return sorted(
            (i for i in self.items.values() if not self.expired(i)),
            key=lambda i: (i.created_at, i.seq),
        )

    def value(self, it: ModelItem) -> float:
        assert isinstance(self.policy, RecallBased)
        p = self.policy
        avg = it.recall_score_total / it.recall_count if it.recall_count else 0.0
        last = it.created_at if it.recalled_at is None else max(it.created_at, it.recalled_at)
        recency: float = 0.5 ** (max(0.0, self.clock[0] - last) / p.recency_half_life)
        return (
            math.log1p(it.recall_count) * p.recall_weight
            + avg * p.score_weight
            + recency * p.recency_weight
        )

    def sweep(self) -> None:
        for it in list(self.items.values()):
            if self.expired(it):
                del self.items[it.id]
        cap = self.cap()
        if cap is None:
            return
        live = [i for i in self.items.values() if not i.pinned]
        if isinstance(self.policy, Lru):
            live.sort(key=lambda i: i.access_seq)
        elif isinstance(self.policy, RecallBased):
            live.sort(key=lambda i: (self.value(i), i.created_at, i.seq))
        else:
            live.sort(key=lambda i: (i.created_at, i.seq))
        for it in live[: max(0, len(live) - cap)]:
            del self.items[it.id]

    def put(self, id: str, content: str, created_at: float | None, pinned: bool | None) -> None:
        now = self.clock[0]
        old = self.items.get(id)
        keep = old is not None and not self.expired(old)
        it = ModelItem(
            id=id,
            content=content,
            metadata={"n": len(content)},
            created_at=now if created_at is None else created_at,
            pinned=(old.pinned if keep and old else False) if pinned is None else pinned,
            access_count=old.access_count if keep and old else 0,
            recall_count=old.recall_count if keep and old else 0,
            recall_score_total=old.recall_score_total if keep and old else 0.0,
            recalled_at=old.recalled_at if keep and old else None,
            accessed_at=now,
        )
        it.seq = self.next_seq()
        it.access_seq = self.next_seq()
        self.items[id] = it
        self.sweep()

    def get(self, id: str) -> MemoryItem | None:
        it = self.items.get(id)
        if it is None or self.expired(it):
            return None
        it.accessed_at = self.clock[0]
        it.access_seq = self.next_seq()
        it.access_count += 1
        return it.item()

    def delete(self, id: str) -> bool:
        it = self.items.pop(id, None)
        return it is not None and not self.expired(it)

    def pin(self, id: str, pinned: bool) -> bool:
        it = self.items.get(id)
        if it is None or self.expired(it):
            return False
        it.pinned = pinned
        self.sweep()
        return True

    def recall(self, id: str, score: float) -> None:
        it = self.items.get(id)
        if it is None or self.expired(it):
            return
        it.recall_count += 1
        it.recall_score_total += score
        it.recalled_at = self.clock[0]


class StoreMachine(RuleBasedStateMachine):
    """Subclassed once per policy below (``POLICY``)."""

    POLICY: EvictionPolicy = NoEviction()

    def __init__(self) -> None:
        super().__init__()
        self.clock = [1_000.0]
        self.tmp = Path(tempfile.mkdtemp(prefix="memstate"))
        self.version = 0

    def now(self) -> float:
        return self.clock[0]

    @initialize(check_interval=st.sampled_from([0, 1, 3, 64]))
    def setup(self, check_interval: int) -> None:
        policy = self.POLICY
        self.config = EvictionConfig(policy=policy, check_interval=check_interval)
        self.model = Model(policy, self.clock)
        self.memory = InMemoryBackend(self.config, clock=self.now)
        self.sqlite = SqliteBackend(
            self.tmp / "store.db", self.config, clock=self.now, synchronous="NORMAL"
        )
        self.url = fresh_url()
        self.postgres = PostgresBackend(self.url, self.config, clock=self.now)

    def stores(self) -> tuple[MemoryBackend, ...]:
        return self.memory, self.sqlite, self.postgres

    @rule(
        id=st.sampled_from(IDS),
        age=st.none() | st.sampled_from([0.0, 1.0, 5.0, 9.0, 10.0, 20.0]),
        pinned=st.none() | st.booleans(),
    )
    def put(self, id: str, age: float | None, pinned: bool | None) -> None:
        self.version += 1
        content = f"{id}-v{self.version}"
        created = None if age is None else self.clock[0] - age
        self.model.put(id, content, created, pinned)
        for store in self.stores():
            item = store.put(id, content, {"n": len(content)}, created_at=created, pinned=pinned)
            assert item.content == content

    @rule(id=st.sampled_from(IDS))
    def put_now(self, id: str) -> None:
        """The common write, drawn more often so that bounds are reached."""
        self.put(id, None, None)

    @rule(id=st.sampled_from(IDS))
    def get(self, id: str) -> None:
        expected = self.model.get(id)
        for store in self.stores():
            assert store.get(id) == expected

    @rule(id=st.sampled_from(IDS))
    def delete(self, id: str) -> None:
        expected = self.model.delete(id)
        for store in self.stores():
            assert store.delete(id) is expected

    @rule(id=st.sampled_from(IDS), pinned=st.booleans())
    def pin(self, id: str, pinned: bool) -> None:
        found = self.model.pin(id, pinned)
        for store in self.stores():
            try:
                store.set_pinned(id, pinned)
                assert found
            except Exception as exc:
                assert not found, exc

    @rule(id=st.sampled_from(IDS), score=st.sampled_from([0.1, 0.5, 0.9, 1.0]))
    def recall(self, id: str, score: float) -> None:
        self.model.recall(id, score)
        for store in self.stores():
            store.record_recall(id, score)

    @rule(dt=st.sampled_from([0.0, 0.5, 1.0, 5.0, 10.0, 30.0]))
    def advance(self, dt: float) -> None:
        self.clock[0] += dt

    @rule()
    def evict(self) -> None:
        self.model.sweep()
        for store in self.stores():
            store.evict()

    @rule()
    def reopen(self) -> None:
        self.sqlite.close()
        self.sqlite = SqliteBackend(
            self.tmp / "store.db", self.config, clock=self.now, synchronous="NORMAL"
        )
        self.postgres.close()
        self.postgres = PostgresBackend(self.url, self.config, clock=self.now)

    @precondition(lambda self: hasattr(self, "model"))
    @rule(
        prefix=st.sampled_from(["", "p:", "a"]),
        offset=st.integers(0, 3),
        limit=st.none() | st.integers(0, 3),
        since=st.none() | st.sampled_from([5.0, 15.0]),
    )
    def list_filtered(
        self, prefix: str, offset: int, limit: int | None, since: float | None
    ) -> None:
        since_at = None if since is None else self.clock[0] - since
        rows = [
            i.item()
            for i in self.model.visible()
            if i.id.startswith(prefix) and (since_at is None or i.created_at > since_at)
        ]
        expected = rows[offset:] if limit is None else rows[offset : offset + limit]
        flt = MemoryFilter(prefix=prefix, since=since_at, offset=offset, limit=limit)
        for store in self.stores():
            assert _comparable(store.list(flt)) == _comparable(expected)

    @invariant()
    def same_visible_items(self) -> None:
        if not hasattr(self, "model"):
            return
        expected = [i.item() for i in self.model.visible()]
        ids = sorted(i.id for i in expected)
        for store in self.stores():
            assert _comparable(store.list()) == _comparable(expected)
            assert store.keys() == ids
            assert store.keys("p:", reverse=True) == sorted(
                (i for i in ids if i.startswith("p:")), reverse=True
            )
            assert store.count() == len(ids)
        cap = self.model.cap()
        if cap is not None:
            assert sum(not i.pinned for i in expected) <= cap

    def teardown(self) -> None:
        if hasattr(self, "sqlite"):
            self.sqlite.close()
            assert self.sqlite.path.exists()
        if hasattr(self, "postgres"):
            self.postgres.close()
            drop_schema(self.url)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _cases(policy: EvictionPolicy, name: str) -> Any:
    machine: type[StoreMachine] = type(f"{name}Machine", (StoreMachine,), {"POLICY": policy})
    case = machine.TestCase
    case.settings = settings(max_examples=30, stateful_step_count=35, deadline=None)
    return case


TestNoEviction = _cases(NoEviction(), "NoEviction")
TestTtl = _cases(Ttl(ttl=10.0), "Ttl")
TestCapacity = _cases(Capacity(max_items=2), "Capacity")
TestCapacityZero = _cases(Capacity(max_items=0), "CapacityZero")
TestLru = _cases(Lru(max_items=2), "Lru")
TestRecallBased = _cases(RecallBased(max_items=2, recency_half_life=20.0), "RecallBased")
TestHybrid = _cases(Hybrid(ttl=10.0, max_items=2), "Hybrid")
