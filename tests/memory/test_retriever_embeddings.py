"""``RetrievalMode.BM25_EMBEDDINGS`` on every backend (in memory, SQLite, PostgreSQL),
directly and through the MemoryStore actor: embedding similarity reorders BM25's
candidates, the scores stay in [0, 1], a retrieval counts as a recall, and the mode is
refused where no embedder is configured."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.memory import (
    InvalidInput,
    KnowledgePage,
    MemoryStoreConfig,
    RetrievalMode,
    RetrieverConfig,
    memory_store_spec,
)
from agcore_actors.memory.embeddings import WordLlamaEmbedder
from agcore_actors.memory.lowlevel import KnowledgeStore, MemoryBackend, MemoryRetriever
from agcore_actors.memory.messages import PutPage, Retrieve
from tests.postgres_fixture import fresh_url

FUSED = RetrieverConfig(mode=RetrievalMode.BM25_EMBEDDINGS)

# Both pages match the query's one known word once; only the meaning tells them apart.
PAGES = [
    KnowledgePage(id="finance", title="Notes", content="dog stock market bonds and interest rates"),
    KnowledgePage(id="pets", title="Notes", content="dog kennel with a puppy that is barking"),
    KnowledgePage(id="other", title="Notes", content="nothing relevant here at all today friend"),
]
QUERY = "dog puppies"


def ids(store: MemoryBackend, config: RetrieverConfig, embedder: WordLlamaEmbedder) -> list[str]:
    result = MemoryRetriever(store, config, embedder=embedder).retrieve(QUERY)
    assert all(0.0 <= item.score <= 1.0 for item in result.items)
    return [item.page.id for item in result.items]


def test_embedding_similarity_reorders_bm25s_candidates(
    store: MemoryBackend, embedder: WordLlamaEmbedder
) -> None:
    ks = KnowledgeStore(store)
    for page in PAGES:
        ks.add_page(page)
    assert ids(store, RetrieverConfig(mode=RetrievalMode.BM25), embedder) == ["finance", "pets"]
    assert ids(store, FUSED, embedder) == ["pets", "finance"]
    # weight 0 is BM25 alone; a page no query term matches is never a candidate.
    lexical = RetrieverConfig(mode=RetrievalMode.BM25_EMBEDDINGS, embedding_weight=0.0)
    assert ids(store, lexical, embedder) == ["finance", "pets"]
    store.evict()  # flushes buffered recall statistics where a backend buffers them
    pets = store.peek("knowledge_pets")
    assert pets is not None and pets.recall_count == 3


def test_an_edited_page_is_ranked_by_its_new_text(
    store: MemoryBackend, embedder: WordLlamaEmbedder
) -> None:
    ks = KnowledgeStore(store)
    for page in PAGES:
        ks.add_page(page)
    assert ids(store, FUSED, embedder)[0] == "pets"
    ks.update_page(KnowledgePage(id="pets", title="Notes", content="dog tax bonds and rates"))
    ks.update_page(KnowledgePage(id="finance", title="Notes", content="dog puppy barking kennel"))
    assert ids(store, FUSED, embedder)[0] == "finance"


def test_the_mode_is_refused_without_an_embedder(store: MemoryBackend) -> None:
    KnowledgeStore(store).add_page(PAGES[0])
    with pytest.raises(InvalidInput, match="needs an embedder"):
        MemoryRetriever(store, FUSED).retrieve(QUERY)


def test_the_embedding_weight_is_a_unit_interval() -> None:
    for weight in (-0.1, 1.1, float("nan")):
        with pytest.raises(ValueError, match="embedding_weight"):
            RetrieverConfig(embedding_weight=weight)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "postgres":
        return {"url": fresh_url()}
    return {} if request.param == "memory" else {"path": str(tmp_path / "memory.db")}


async def test_the_actor_retrieves_with_embeddings_while_others_ask_at_once(
    system: ActorSystem, location: dict[str, str], embedder: WordLlamaEmbedder
) -> None:
    config = MemoryStoreConfig(embedder=embedder, retriever=FUSED, **location)  # type: ignore[arg-type]
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    for page in PAGES:
        await mem.ask(PutPage(page))
    got: list[list[str]] = []

    async def ask() -> None:
        result = await mem.ask(Retrieve(query=QUERY))
        got.append([item.page.id for item in result.items])

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(ask)
    assert got == [["pets", "finance"]] * 8
    bm25 = await mem.ask(Retrieve(query=QUERY, mode=RetrievalMode.BM25))
    assert [item.page.id for item in bm25.items] == ["finance", "pets"]


async def test_the_actor_refuses_the_mode_without_an_embedder(
    system: ActorSystem, location: dict[str, str]
) -> None:
    config = MemoryStoreConfig(**location)  # type: ignore[arg-type]
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    await mem.ask(PutPage(PAGES[0]))
    with pytest.raises(InvalidInput, match="needs an embedder"):
        await mem.ask(Retrieve(query=QUERY, mode=RetrievalMode.BM25_EMBEDDINGS))
    assert [i.restarts for i in system.snapshot() if i.name == "memory"] == [0]
