"""Memory: items, stores (in-memory, SQLite), eviction, retrieval, and
conversation / knowledge / session memory behind the MemoryStore actor.

Two ways in:

- the **actor** (:class:`MemoryStore`, protocol in
  :mod:`agcore_actors.memory.messages`), which owns one store and is what
  sessions talk to;
- the **synchronous core** (:class:`SqliteBackend`, :class:`InMemoryBackend`, and
  :class:`ConversationMemory`, :class:`KnowledgeStore`,
  :class:`FactMemory`, :class:`MemoryRetriever` over either), for scripts,
  tests and tools that own a store directly. Its calls block (SQLite I/O):
  never call them on the event loop; the actor runs them in a worker thread.
"""

from ._actor import MemoryStore, MemoryStoreConfig, memory_store
from ._conversation import ConversationMemory, ConversationMemoryConfig, MemoryStrategy
from ._errors import (
    InvalidInput,
    MemoryStoreError,
    NotFound,
    RetrievalError,
    SerializationError,
    StorageError,
)
from ._eviction import (
    Capacity,
    EvictionConfig,
    EvictionPolicy,
    Hybrid,
    ItemStats,
    Lru,
    NoEviction,
    RecallBased,
    Ttl,
    choose_victims,
    eviction_order,
    is_expired,
    recall_value,
)
from ._facts import FactMemory
from ._item import (
    ChatMessage,
    KnowledgePage,
    MemoryFilter,
    MemoryItem,
    PageIndexEntry,
    RetrievalResult,
    ScoredPage,
)
from ._knowledge import KNOWLEDGE_PREFIX, KnowledgeStore
from ._retriever import MemoryRetriever, RetrievalMode, RetrieverConfig
from ._schema import SCHEMA_VERSION
from ._sqlite import SqliteBackend
from ._store import InMemoryBackend, MemoryBackend
from ._text import (
    DEFAULT_STOP_WORDS,
    extract_keywords,
    text_overlap_dice,
    text_overlap_score,
    tokens,
)
from ._tool import RETRIEVE_TOOL, RETRIEVE_TOOL_NAME, parse_retrieve_arguments, run_retrieve_tool
from ._transcript import messages_from_jsonl, messages_to_jsonl

__all__ = [
    "DEFAULT_STOP_WORDS",
    "KNOWLEDGE_PREFIX",
    "RETRIEVE_TOOL",
    "RETRIEVE_TOOL_NAME",
    "SCHEMA_VERSION",
    "Capacity",
    "ChatMessage",
    "ConversationMemory",
    "ConversationMemoryConfig",
    "EvictionConfig",
    "EvictionPolicy",
    "FactMemory",
    "Hybrid",
    "InMemoryBackend",
    "InvalidInput",
    "ItemStats",
    "KnowledgePage",
    "KnowledgeStore",
    "Lru",
    "MemoryBackend",
    "MemoryFilter",
    "MemoryItem",
    "MemoryRetriever",
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
    "SqliteBackend",
    "StorageError",
    "Ttl",
    "choose_victims",
    "eviction_order",
    "extract_keywords",
    "is_expired",
    "memory_store",
    "messages_from_jsonl",
    "messages_to_jsonl",
    "parse_retrieve_arguments",
    "recall_value",
    "run_retrieve_tool",
    "text_overlap_dice",
    "text_overlap_score",
    "tokens",
]
