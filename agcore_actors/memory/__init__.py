"""Memory: knowledge and long-term memories, in the MemoryStore actor.

What outlives a session lives here: knowledge pages with retrieval (BM25, Dice,
hybrid) and items an application or agent keeps (with eviction and pinning). A
session's conversation and facts do not: they live in the session store
(:mod:`agcore_actors.store`), their one home.

::

    spec = memory_store_spec("memory", config=MemoryStoreConfig(path="memory.db"))
    # A supervisor of its own: disk trouble cannot use up the root's restarts.
    await system.start_supervisor(SupervisorSpec("memory-supervisor", children=[spec]))
    memory = system.lookup("memory")
    await memory.ask(mm.PutPage(KnowledgePage(id="knowledge_tea", title="Tea")))

with ``from agcore_actors.memory import messages as mm`` (the protocol). A
store that cannot write (disk full, read-only file) stays up, serves reads and
says it is degraded: in ``GetMemoryStatus`` and in its row of
``system.snapshot()`` (``ActorInfo.degraded``). Two
public submodules go further: :mod:`agcore_actors.memory.policy` (pure eviction
and scoring functions) and :mod:`agcore_actors.memory.lowlevel` (the synchronous
backends and views the actor runs, for scripts and tools that own a store).
"""

from .._exports import publish
from . import messages as messages  # the protocol: import it qualified
from ._actor import MemoryStore, memory_store_spec
from ._config import MemoryStoreConfig
from ._errors import (
    InvalidInput,
    MemoryStoreError,
    NotFound,
    RetrievalError,
    SerializationError,
    StorageBusy,
    StorageCorrupt,
    StorageError,
    StorageUnavailable,
    StoreInUse,
)
from ._eviction import (
    Capacity,
    EvictionConfig,
    EvictionPolicy,
    Hybrid,
    Lru,
    NoEviction,
    RecallBased,
    Ttl,
)
from ._item import (
    KnowledgePage,
    MemoryFilter,
    MemoryItem,
    PageIndexEntry,
    RetrievalResult,
    ScoredPage,
)
from ._retriever import RetrievalMode, RetrieverConfig
from ._runner import TrioWallClock
from ._tool import RETRIEVE_TOOL, RETRIEVE_TOOL_NAME, parse_retrieve_arguments, run_retrieve_tool

__all__ = [
    "RETRIEVE_TOOL",
    "RETRIEVE_TOOL_NAME",
    "Capacity",
    "EvictionConfig",
    "EvictionPolicy",
    "Hybrid",
    "InvalidInput",
    "KnowledgePage",
    "Lru",
    "MemoryFilter",
    "MemoryItem",
    "MemoryStore",
    "MemoryStoreConfig",
    "MemoryStoreError",
    "NoEviction",
    "NotFound",
    "PageIndexEntry",
    "RecallBased",
    "RetrievalError",
    "RetrievalMode",
    "RetrievalResult",
    "RetrieverConfig",
    "ScoredPage",
    "SerializationError",
    "StorageBusy",
    "StorageCorrupt",
    "StorageError",
    "StorageUnavailable",
    "StoreInUse",
    "TrioWallClock",
    "Ttl",
    "memory_store_spec",
    "parse_retrieve_arguments",
    "run_retrieve_tool",
]

publish(__name__, __all__)
