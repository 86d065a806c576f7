"""The synchronous core under the :class:`~agcore_actors.memory.MemoryStore` actor.

For scripts, tests and tools that own a store directly: the backends
(:class:`SqliteBackend`, :class:`PostgresBackend`, :class:`InMemoryBackend`, each a
:class:`MemoryBackend`;
:class:`SqliteReader` reads a file another process may be writing)
and the views over one (:class:`KnowledgeStore`, :class:`MemoryRetriever`).
Their calls block (SQLite I/O): never call them on the event loop; the actor runs them
in a worker thread.
A backend is not thread-safe: one caller at a time.
"""

from .._exports import publish
from ._inmemory import InMemoryBackend
from ._knowledge import KNOWLEDGE_PREFIX, KnowledgeStore
from ._postgres import PostgresBackend
from ._postgres_reads import PostgresReader
from ._retriever import MemoryRetriever
from ._schema import SCHEMA_VERSION
from ._sqlite import SqliteBackend
from ._sqlite_reads import SqliteReader
from ._store import MemoryBackend

__all__ = [
    "KNOWLEDGE_PREFIX",
    "SCHEMA_VERSION",
    "InMemoryBackend",
    "KnowledgeStore",
    "MemoryBackend",
    "MemoryRetriever",
    "PostgresBackend",
    "PostgresReader",
    "SqliteBackend",
    "SqliteReader",
]

publish(__name__, __all__)
