"""The seed's memory store acceptance checks (spec §15.7), ported to both
stores, with the seed's bugs fixed where the spec marks them; plus checks the spec asks a
port to add. The conversation (§15.8) and FactMemory checks moved with the transcripts
to the session store: tests/store/test_seed_conversation.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    InvalidInput,
    MemoryFilter,
    NoEviction,
    NotFound,
    RetrievalError,
    SerializationError,
    StorageError,
    Ttl,
)
from agcore_actors.memory.lowlevel import (
    MemoryBackend,
)
from tests.memory.helpers import FakeClock, make_store


def save(store: MemoryBackend, id: str) -> None:
    store.put(id, f"content-{id}", {})


# -- §15.7 store ------------------------------------------------------------------


def test_save_get_delete_list(store: MemoryBackend) -> None:
    save(store, "a")
    save(store, "b")
    item = store.get("a")
    assert item is not None and item.id == "a" and item.content == "content-a"
    assert len(store.list()) == 2
    assert store.delete("a") is True
    assert store.get("a") is None
    assert store.delete("a") is False  # idempotent


def test_save_is_upsert(store: MemoryBackend) -> None:
    save(store, "a")
    store.put("a", "updated")
    item = store.get("a")
    assert item is not None and item.content == "updated"
    assert len(store.list()) == 1


def test_list_with_prefix_and_limit(store: MemoryBackend) -> None:
    for id in ("foo_a", "foo_b", "bar_a"):
        save(store, id)
    assert [i.id for i in store.list(MemoryFilter(prefix="foo_"))] == ["foo_a", "foo_b"]
    assert len(store.list(MemoryFilter(prefix="foo_", limit=1))) == 1


@pytest.mark.parametrize("same_instant", [False, True])
def test_capacity_eviction(kind: str, tmp_path: Path, clock: FakeClock, same_instant: bool) -> None:
    # The seed needed strictly increasing timestamps; ties are broken by write order.
    store = make_store(
        kind, tmp_path, clock, EvictionConfig(policy=Capacity(max_items=2), check_interval=1)
    )
    for id in "abc":
        save(store, id)
        if not same_instant:
            clock.advance(0.001)
    assert [i.id for i in store.list()] == ["b", "c"]
    store.close()


def test_ttl_eviction_on_virtual_time(kind: str, tmp_path: Path, clock: FakeClock) -> None:
    store = make_store(kind, tmp_path, clock, EvictionConfig(policy=Ttl(ttl=1.0), check_interval=1))
    save(store, "a")
    clock.advance(1.1)
    save(store, "b")
    assert [i.id for i in store.list()] == ["b"]
    store.close()


def test_expired_item_is_invisible_before_any_sweep(
    kind: str, tmp_path: Path, clock: FakeClock
) -> None:
    # Seed bug: eviction was lazy, so get/list returned expired items until
    # the next check. Here check_interval is large and no write happens.
    store = make_store(
        kind, tmp_path, clock, EvictionConfig(policy=Ttl(ttl=10.0), check_interval=1000)
    )
    save(store, "a")
    store.put("keep", "pinned", pinned=True)
    clock.advance(10.0)  # exactly at the cutoff counts as expired
    assert store.get("a") is None
    assert [i.id for i in store.list()] == ["keep"]
    assert store.count() == 1 and store.keys() == ["keep"]
    assert store.evict() == ["a"]
    store.close()


def test_capacity_never_overshoots(kind: str, tmp_path: Path, clock: FakeClock) -> None:
    # Seed bug: between checks the store grew to max_items + check_interval - 1.
    store = make_store(
        kind, tmp_path, clock, EvictionConfig(policy=Capacity(max_items=3), check_interval=64)
    )
    for i in range(20):
        save(store, f"k{i:02d}")
        assert store.count() <= 3
    assert store.keys() == ["k17", "k18", "k19"]
    store.close()


def test_none_policy_no_eviction(kind: str, tmp_path: Path, clock: FakeClock) -> None:
    store = make_store(kind, tmp_path, clock, EvictionConfig(policy=NoEviction(), check_interval=1))
    with store.batch():
        for i in range(100):
            save(store, f"item-{i}")
    assert len(store.list()) == 100
    store.close()


def test_bad_input_is_refused_and_changes_nothing(store: MemoryBackend) -> None:
    save(store, "a")
    with pytest.raises(InvalidInput):
        store.put("", "x")
    with pytest.raises(InvalidInput):
        store.put("b", "x", {"f": object()})
    with pytest.raises(InvalidInput):
        store.put("b", "x", created_at=float("nan"))
    with pytest.raises(InvalidInput):
        store.list(MemoryFilter(offset=-1))
    assert store.keys() == ["a"]


def test_errors_keep_the_seeds_recoverability() -> None:
    assert NotFound("x").is_recoverable() and RetrievalError("x").is_recoverable()
    assert not StorageError("x").is_recoverable()
    assert not SerializationError("x").is_recoverable()
    assert not InvalidInput("x").is_recoverable()
