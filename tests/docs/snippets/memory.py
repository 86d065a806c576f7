"""The code of docs/memory.md, run by tests/docs/test_snippets.py."""

from __future__ import annotations

from pathlib import Path

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, RuntimeBundle, StoreTurns
from agcore_actors.llm import messages as lm
from agcore_actors.memory import (
    EvictionConfig,
    KnowledgePage,
    Lru,
    MemoryStoreConfig,
    memory_store_spec,
)
from agcore_actors.memory import messages as mm
from agcore_actors.store import messages as sm
from agcore_actors.tools import ToolRegistry, tool_executor_spec


async def fill(system: ActorSystem, path: Path) -> tuple[ActorRef[mm.MemoryMsg], list[str]]:
    # --8<-- [start:store]
    config = MemoryStoreConfig(
        path=str(path / "memory.db"),  # None: in memory
        eviction=EvictionConfig(policy=Lru(max_items=10_000)),  # keep the 10,000 last used
    )
    memory = await system.root.start_child(memory_store_spec("memory", config=config))
    await memory.ask(
        mm.PutPage(
            KnowledgePage(
                id="refunds",
                title="Refund policy",
                content="Refunds are accepted within 30 days of purchase with a receipt.",
                tags=["billing"],
            )
        )
    )
    await memory.ask(mm.Pin("knowledge_refunds", True))  # a page is an item: never evict it
    found = await memory.ask(mm.Retrieve(query="how many days for a refund?"))
    titles = [f"{hit.page.title} ({hit.score:.2f})" for hit in found.items]
    # --8<-- [end:store]
    return memory, titles


async def knowledge_bot(
    system: ActorSystem,
    llm: ActorRef[lm.ProviderMsg],
    store: ActorRef[sm.StoreMsg],
    memory: ActorRef[mm.MemoryMsg],
) -> RuntimeBundle:
    # --8<-- [start:knowledge]
    registry = ToolRegistry()  # your own tools, if any; knowledge() adds `retrieve`
    executor = await system.root.start_child(tool_executor_spec("tools", registry=registry))
    return (
        AgentBuilder()
        .provider(llm)
        .store(StoreTurns(store))
        .tools(executor, registry)
        .knowledge(memory)
        .agent(Agent(name="support", instructions="Use retrieve before answering."))
        .build()
    )
    # --8<-- [end:knowledge]


async def with_embeddings(system: ActorSystem) -> list[str]:
    """The local-embeddings example of docs/memory.md; the titles it retrieves."""
    # --8<-- [start:embeddings]
    from agcore_actors.memory import RetrievalMode, RetrieverConfig
    from agcore_actors.memory.embeddings import WordLlamaEmbedder

    config = MemoryStoreConfig(
        path=None,  # or a SQLite file, or url="postgresql://…"
        embedder=WordLlamaEmbedder(),  # without the extra: one line naming it
        retriever=RetrieverConfig(mode=RetrievalMode.BM25_EMBEDDINGS),
    )
    memory = await system.root.start_child(memory_store_spec("memory", config=config))
    # --8<-- [end:embeddings]
    for id, text in [("money", "dog stock market bonds"), ("pets", "dog kennel puppy barking")]:
        await memory.ask(mm.PutPage(KnowledgePage(id=id, title="Notes", content=text)))
    found = await memory.ask(mm.Retrieve(query="dog puppies"))
    return [item.page.id for item in found.items]
