"""Long-term memories: kept per scope, recalled only within it, never seen by knowledge
retrieval, bounded like every item; bad input refused with nothing written."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
from agcore_actors.memory import (
    InvalidInput,
    KnowledgePage,
    MemoryItem,
    MemoryStoreConfig,
    RetrievalMode,
    RetrieverConfig,
    memory_store_spec,
)
from agcore_actors.memory import messages as mm
from agcore_actors.memory._memories import MAX_MEMORY_CHARS, Memories
from agcore_actors.memory.embeddings import WordLlamaEmbedder
from agcore_actors.memory.lowlevel import KnowledgeStore, MemoryBackend, MemoryRetriever
from tests.memory.helpers import FakeClock, make_store


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryBackend]:
    s = make_store(str(request.param), tmp_path, FakeClock())
    yield s
    s.close()


def texts(found: list[tuple[MemoryItem, float]]) -> list[str]:
    return [item.content for item, _ in found]


def test_a_memory_is_recalled_in_its_scope_best_first(store: MemoryBackend) -> None:
    mem = Memories(store)
    mem.remember("ana", "Ana drinks green tea every morning", tags=["tea"])
    mem.remember("ana", "Ana's dog is called Pixel")
    mem.remember("bob", "Bob drinks black coffee")
    found = mem.recall("ana", "what does Ana drink in the morning?")
    assert texts(found)[0] == "Ana drinks green tea every morning"
    assert all(0.0 < score <= 1.0 for _, score in found)
    assert texts(mem.recall("bob", "drinks")) == ["Bob drinks black coffee"]
    assert mem.recall("carol", "drinks") == []
    assert texts(mem.recall("ana", "tea")) == ["Ana drinks green tea every morning"]


def test_scopes_never_leak_into_each_other(store: MemoryBackend) -> None:
    mem = Memories(store)
    for scope in ("a", "a:b", "a%3Ab", "a:"):
        mem.remember(scope, f"secret of {scope} marmalade")
    for scope in ("a", "a:b", "a%3Ab", "a:"):
        assert texts(mem.recall(scope, "marmalade")) == [f"secret of {scope} marmalade"]
        assert [i.content for i in mem.list(scope)] == [f"secret of {scope} marmalade"]


def test_forget_touches_only_its_own_scope(store: MemoryBackend) -> None:
    mem = Memories(store)
    kept = mem.remember("ana", "Ana likes jazz")
    assert not mem.forget("bob", kept.id)
    assert not mem.forget("ana", "memory:ana:nope")
    assert texts(mem.recall("ana", "jazz")) == ["Ana likes jazz"]
    assert mem.forget("ana", kept.id)
    assert mem.recall("ana", "jazz") == []


def test_knowledge_retrieval_never_returns_memories(
    store: MemoryBackend, embedder: WordLlamaEmbedder
) -> None:
    mem = Memories(store)
    mem.remember("ana", "the borrow checker frightens Ana")
    KnowledgeStore(store).add_page(
        KnowledgePage(id="rust", title="Rust", content="the borrow checker")
    )
    for mode in RetrievalMode:
        retriever = MemoryRetriever(store, RetrieverConfig(mode=mode), embedder=embedder)
        result = retriever.retrieve("borrow checker")
        assert [i.page.id for i in result.items] == ["rust"], mode


def test_a_recall_counts_for_recall_based_eviction(store: MemoryBackend) -> None:
    mem = Memories(store)
    kept = mem.remember("ana", "Ana plays the cello")
    mem.recall("ana", "cello")
    store.evict()  # flushes buffered statistics where a backend buffers them
    item = store.peek(kept.id)
    assert item is not None and item.recall_count == 1 and item.recall_score_total > 0


@pytest.mark.parametrize(
    "scope, text, tags",
    [
        ("", "fine", None),
        ("ana", "", None),
        ("ana", "   ", None),
        ("ana", "x" * (MAX_MEMORY_CHARS + 1), None),
        ("ana", "bad \ud800", None),
        ("a\ud800", "fine", None),
        ("ana", "fine", ["ok", "\ud800"]),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(
    store: MemoryBackend, scope: str, text: str, tags: list[str] | None
) -> None:
    with pytest.raises(InvalidInput):
        Memories(store).remember(scope, text, tags=tags)
    assert store.keys() == []


_scopes = st.text(alphabet=st.sampled_from("ab:%_'\\é"), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kept=st.lists(st.tuples(_scopes, st.integers(0, 5)), min_size=1, max_size=12))
def test_recall_returns_exactly_the_scopes_own_matches(kept: list[tuple[str, int]]) -> None:
    """A model that shares no code: a dict of scope -> the words its memories hold."""
    store = make_store("memory", Path("."), FakeClock())
    mem = Memories(store)
    model: dict[str, set[str]] = {}
    for n, (scope, word) in enumerate(kept):
        mem.remember(scope, f"note {n} about zebra{word}")
        model.setdefault(scope, set()).add(f"note {n} about zebra{word}")
    for scope, notes in model.items():
        for word in range(6):
            found = set(texts(mem.recall(scope, f"zebra{word}", max_results=20)))
            assert found == {t for t in notes if t.endswith(f"zebra{word}")}
    store.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_many_callers_some_cancelled_keep_each_scope_exact(
    backend: str, tmp_path: Path
) -> None:
    """40 callers remember and recall at once in 4 scopes; every third gives up at a
    random checkpoint. A memory whose Remember answered is recalled in its scope only; one
    whose caller gave up is there whole or not at all."""
    path = None if backend == "memory" else str(tmp_path / "m.db")
    answered: dict[str, set[str]] = {f"u{n}": set() for n in range(4)}
    attempted: dict[str, set[str]] = {f"u{n}": set() for n in range(4)}
    async with ActorSystem() as system:
        memory = await system.root.start_child(
            memory_store_spec("memory", config=MemoryStoreConfig(path=path))
        )

        async def caller(n: int) -> None:
            scope, text = f"u{n % 4}", f"caller {n} keeps walrus{n}"
            attempted[scope].add(text)
            with trio.move_on_after(0.0005 * n if n % 3 == 0 else math.inf):
                await memory.ask(mm.Remember(scope=scope, text=text))
                answered[scope].add(text)
                await memory.ask(mm.Recall(scope=scope, query=f"walrus{n}"))

        async with trio.open_nursery() as nursery:
            for n in range(40):
                nursery.start_soon(caller, n)
        for scope in answered:
            listed = {i.content for i in (await memory.ask(mm.ListMemories(scope))).items}
            assert answered[scope] <= listed <= attempted[scope], scope
            found = await memory.ask(mm.Recall(scope=scope, query="walrus", max_results=20))
            assert {m.text for m in found.memories} <= attempted[scope]
