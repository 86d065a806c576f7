"""Both backends: what cannot be stored is refused with a typed error before
anything changes, and a failed batch leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agcore_actors import ActorSystem
from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    InvalidInput,
    KnowledgePage,
    MemoryStoreConfig,
    memory_store_spec,
)
from agcore_actors.memory.lowlevel import KnowledgeStore, MemoryBackend
from agcore_actors.memory.messages import Get, MemoryMsg, Put, PutPage
from tests.memory.helpers import FakeClock, make_store

LONE = "\ud800"  # a lone surrogate: a str, but not encodable as UTF-8


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryBackend]:
    s = make_store(str(request.param), tmp_path, FakeClock())
    s.put("keep", "x")
    yield s
    s.close()


UNSTORABLE_PUTS: list[tuple[str, Any, Any]] = [
    (f"id{LONE}", "x", None),
    ("id", f"content{LONE}", None),
    ("id", "x", {"k": LONE}),
    ("id", "x", {LONE: 1}),
    ("id", "x", {"k": object()}),
]


@pytest.mark.parametrize("id, content, metadata", UNSTORABLE_PUTS)
def test_an_unstorable_put_is_invalid_input_and_changes_nothing(
    store: MemoryBackend, id: str, content: str, metadata: Any
) -> None:
    with pytest.raises(InvalidInput):
        store.put(id, content, metadata)
    assert store.keys() == ["keep"]


def test_unstorable_pages_are_refused_before_anything_is_written(store: MemoryBackend) -> None:
    pages = KnowledgeStore(store)
    for bad in (
        KnowledgePage(id="p", title=f"t{LONE}"),
        KnowledgePage(id=f"p{LONE}", title="t"),
        KnowledgePage(id="p", title="t", tags=["ok", LONE]),
    ):
        with pytest.raises(InvalidInput):
            pages.add_page(bad)
    assert store.keys() == ["keep"]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_unstorable_input_is_the_askers_error_and_the_store_keeps_its_data(
    backend: str, tmp_path: Path
) -> None:
    # Not strict: a strict system would refuse these messages at the sender.
    path = None if backend == "memory" else str(tmp_path / "m.db")
    config = MemoryStoreConfig(path=path)
    async with ActorSystem() as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        kept = await mem.ask(Put(id="note", content="remember me"))
        bad_requests: list[MemoryMsg] = [
            PutPage(KnowledgePage(id="p", title="t", content=LONE)),
            Put(id="x", content="y", metadata={"k": LONE}),
            Put(id=LONE, content="y"),
            Put(id="note", content=LONE),
        ]
        for bad in bad_requests:
            with pytest.raises(InvalidInput):
                await mem.ask(bad)
        note = await mem.ask(Get("note"))
        assert note is not None and note.content == kept.content
        info = next(i for i in system.snapshot() if i.name == "memory")
        assert info.restarts == 0


def test_a_failed_batch_rolls_back_everything(store: MemoryBackend) -> None:
    store.put("pinned", "p", pinned=True)
    before = store.list()
    with pytest.raises(InvalidInput), store.batch():
        store.put("a", "1")
        store.put("keep", "changed")
        store.delete("pinned")
        store.get("keep")
        store.record_recall("keep", 0.5)
        store.put("", "refused")
    assert store.list() == before


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_failed_batch_restores_the_capacity_count(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path, FakeClock(), EvictionConfig(policy=Capacity(max_items=5)))
    store.put("keep", "x")
    with pytest.raises(InvalidInput), store.batch():
        store.put("a", "1")
        store.put("b", "2")
        store.delete("keep")
        store.put("", "refused")
    assert store.keys() == ["keep"]
    for i in range(4):  # the capacity count was restored too: nothing is evicted
        store.put(f"n{i}", "x")
    assert store.keys() == ["keep", "n0", "n1", "n2", "n3"]
    store.close()


def test_a_page_changed_in_a_failed_batch_is_as_it_was(store: MemoryBackend) -> None:
    pages = KnowledgeStore(store)
    old = pages.add_page(KnowledgePage(id="p", title="old"))
    for change in (pages.add_page, pages.update_page):
        with pytest.raises(RuntimeError), store.batch():
            change(KnowledgePage(id="p", title="new"))
            raise RuntimeError("the caller's own failure, after the change")
        assert pages.get_page("p") == old
