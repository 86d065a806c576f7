"""Memory: the MemoryStore actor, its configuration, and the values it stores.

::

    spec = memory_store_spec("memory", config=MemoryStoreConfig(path="memory.db"))
    # A supervisor of its own: disk trouble cannot use up the root's restarts.
    await system.start_supervisor(SupervisorSpec("memory-supervisor", children=[spec]))
    memory = system.lookup("memory")
    await memory.ask(mm.Append("s1", [StoredMessage(role="user", content="hi")]))

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
from ._conversation import ConversationMemoryConfig, MemoryStrategy
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
    StoredMessage,
)
from ._retriever import RetrievalMode, RetrieverConfig
from ._runner import TrioWallClock
from ._tool import RETRIEVE_TOOL, RETRIEVE_TOOL_NAME, parse_retrieve_arguments, run_retrieve_tool

__all__ = [
    "RETRIEVE_TOOL",
    "RETRIEVE_TOOL_NAME",
    "Capacity",
    "ConversationMemoryConfig",
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
    "MemoryStrategy",
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
    "StoredMessage",
    "TrioWallClock",
    "Ttl",
    "memory_store_spec",
    "parse_retrieve_arguments",
    "run_retrieve_tool",
]

publish(__name__, __all__)
