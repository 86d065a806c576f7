"""The MemoryStore actor's protocol: every request it accepts and its reply.

Items (the generic store)::

    Put(id, content, metadata, created_at, pinned) -> MemoryItem
    Get(id)                   -> MemoryItem | None     (counts an access)
    Delete(id)                -> bool                  (True if it was there)
    List(filter)              -> Items
    Count(prefix)             -> int
    Pin(id, pinned)           -> MemoryItem            (NotFound if absent)
    Evict()                   -> list[str]             (ids removed by a sweep now)

Conversations and session facts are not here: they live in the session store
(:mod:`agcore_actors.store`), the one home of a session's state. Memory keeps knowledge
and long-term memories (items and pages) that outlive a session.

Long-term memories (texts kept for a scope: a user, an agent)::

    Remember(scope, text, tags, pinned) -> MemoryItem      (its id names the memory)
    Recall(scope, query, max_results)   -> Recalled        (best first, scores in [0, 1])
    Forget(scope, id)                   -> bool
    ListMemories(scope)                 -> Items           (oldest first)

Knowledge and retrieval::

    PutPage(page)        -> KnowledgePage   (insert or replace)
    UpdatePage(page)     -> KnowledgePage   (NotFound if absent)
    GetPage(id)          -> KnowledgePage | None
    DeletePage(id)       -> bool
    SearchPages(query)   -> Pages           (substring search)
    PageIndex()          -> IndexEntries
    Retrieve(query, max_results, min_score, mode) -> RetrievalResult

Health::

    GetMemoryStatus()    -> MemoryStatus    (backend, degraded state)

Cancelling the asker (or its ask timing out):

- of a *write* (``Put``, ``Delete``, ``Pin``, ``Evict``, ``Remember``, ``Forget``,
  ``PutPage``, ``UpdatePage``, ``DeletePage``):
  the write either completes (and stays) or never started; a transaction is
  never interrupted half way, so the asker's cancellation may wait for it;
- of a *read* (every other request): the read is abandoned at once and the
  store goes on with its next request (on SQLite the read's thread finishes in
  the background, on a connection of its own); nothing changes, except that
  ``Get``, ``GetPage``, ``Recall`` and ``Retrieve`` may still count their
  access or recall (advisory statistics).
- of ``GetMemoryStatus``: nothing happens.

Lists of structs come wrapped in a reply struct (``Items``, ``Pages``,
``IndexEntries``), so a reply can gain fields (a cursor, a total)
without changing its type.

Errors: :class:`~agcore_actors.memory.InvalidInput`,
:class:`~agcore_actors.memory.NotFound`,
:class:`~agcore_actors.memory.SerializationError`,
:class:`~agcore_actors.memory.RetrievalError`,
:class:`~agcore_actors.memory.StorageBusy` and
:class:`~agcore_actors.memory.StorageUnavailable` are the asker's (the actor
carries on, nothing was changed; after a StorageUnavailable it is degraded until
a write succeeds). Any other :class:`~agcore_actors.memory.StorageError` crashes
the actor: its supervisor restarts it, which reopens the database.

Every write is committed (durable, see ``SqliteBackend``) before its reply is
sent.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .._exports import publish
from ..actor import Request
from ._item import (
    KnowledgePage,
    MemoryFilter,
    MemoryItem,
    PageIndexEntry,
    RetrievalResult,
)
from ._retriever import RetrievalMode

__all__ = [
    "Count",
    "Delete",
    "DeletePage",
    "Evict",
    "Forget",
    "Get",
    "GetMemoryStatus",
    "GetPage",
    "IndexEntries",
    "Items",
    "List",
    "ListMemories",
    "MemoryMsg",
    "MemoryReply",
    "MemoryStatus",
    "PageIndex",
    "Pages",
    "Pin",
    "Put",
    "PutPage",
    "Recall",
    "Recalled",
    "RecalledMemory",
    "Remember",
    "Retrieve",
    "SearchPages",
    "UpdatePage",
]

# -- replies that carry lists of structs ----------------------------------------


class Items(msgspec.Struct, frozen=True):
    """Stored items, in the order the request defines."""

    items: list[MemoryItem]


class Pages(msgspec.Struct, frozen=True):
    """Knowledge pages, in index order."""

    pages: list[KnowledgePage]


class IndexEntries(msgspec.Struct, frozen=True):
    """The light view of every knowledge page, in index order."""

    entries: list[PageIndexEntry]


# -- items ----------------------------------------------------------------------


class Put(Request[MemoryItem], frozen=True, tag=True, kw_only=True):
    """Insert or replace an item (an upsert); the reply is the stored item."""

    id: str
    content: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    #: None: the store's clock.
    created_at: float | None = None
    #: None: keep an existing item's flag (False for a new one).
    pinned: bool | None = None


class Get(Request[MemoryItem | None], frozen=True, tag=True):
    """The visible item ``id`` (None if absent or expired); counts an access."""

    id: str


class Delete(Request[bool], frozen=True, tag=True):
    """Remove ``id``; True if a visible item was removed."""

    id: str


class List(Request[Items], frozen=True, tag=True):
    """The visible items the filter selects, oldest first."""

    filter: MemoryFilter = MemoryFilter()


class Count(Request[int], frozen=True, tag=True):
    """How many visible items have ids starting with ``prefix``."""

    prefix: str = ""


class Pin(Request[MemoryItem], frozen=True, tag=True):
    """Pin (or unpin) a visible item: pinned items never expire nor are evicted."""

    id: str
    pinned: bool = True


class Evict(Request[list[str]], frozen=True, tag=True):
    """Run a full eviction sweep now; the ids it removed."""


# -- long-term memories ---------------------------------------------------------


class RecalledMemory(msgspec.Struct, frozen=True, kw_only=True):
    """A memory that answers a recall, with its score in [0, 1]."""

    id: str
    text: str
    tags: list[str]
    created_at: float
    score: float


class Recalled(msgspec.Struct, frozen=True):
    memories: list[RecalledMemory]


class Remember(Request[MemoryItem], frozen=True, tag=True, kw_only=True):
    """Keep ``text`` (at most 4,000 characters) as a memory of ``scope``."""

    scope: str
    text: str
    tags: list[str] = msgspec.field(default_factory=list)
    #: A pinned memory is never evicted.
    pinned: bool = False


class Recall(Request[Recalled], frozen=True, tag=True, kw_only=True):
    """``scope``'s memories that answer ``query`` (BM25 within the scope, blended with
    Dice); each counts as a recall for recall-based eviction."""

    scope: str
    query: str
    max_results: int = 5


class Forget(Request[bool], frozen=True, tag=True):
    """Delete the memory ``id`` of ``scope``; an id of another scope is never touched."""

    scope: str
    id: str


class ListMemories(Request[Items], frozen=True, tag=True):
    """Every memory of ``scope``, oldest first."""

    scope: str


# -- knowledge ------------------------------------------------------------------


class PutPage(Request[KnowledgePage], frozen=True, tag=True):
    """Insert or replace a knowledge page; the reply has its timestamps set."""

    page: KnowledgePage


class UpdatePage(Request[KnowledgePage], frozen=True, tag=True):
    """Replace an existing knowledge page (NotFound if there is none)."""

    page: KnowledgePage


class GetPage(Request[KnowledgePage | None], frozen=True, tag=True):
    """The knowledge page ``id``, or None; counts an access."""

    id: str


class DeletePage(Request[bool], frozen=True, tag=True):
    """Remove the knowledge page ``id``; True if it was there."""

    id: str


class SearchPages(Request[Pages], frozen=True, tag=True):
    """Pages containing ``query`` (case-insensitive substring), in index order."""

    query: str


class PageIndex(Request[IndexEntries], frozen=True, tag=True):
    """The index of every knowledge page."""


class Retrieve(Request[RetrievalResult], frozen=True, tag=True, kw_only=True):
    """The knowledge pages that answer ``query``, best first (counts their recall)."""

    query: str
    #: None: the actor's configured value.
    max_results: int | None = None
    min_score: float | None = None
    mode: RetrievalMode | None = None


# -- health ---------------------------------------------------------------------


class MemoryStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The store's backend and health."""

    backend: Literal["memory", "sqlite", "postgres"]
    #: The SQLite file (None otherwise).
    path: str | None = None
    #: True since a storage failure (disk full, read-only, I/O) until a write succeeds.
    degraded: bool = False
    #: The failure that made it degraded.
    last_error: str | None = None
    #: Requests that failed since it became degraded.
    refused: int = 0
    #: The PostgreSQL URL, its password hidden (None otherwise).
    url: str | None = None


class GetMemoryStatus(Request[MemoryStatus], frozen=True, tag=True):
    """The store's backend and whether it is degraded."""


#: Every reply the actor gives.
MemoryReply = (
    MemoryItem
    | KnowledgePage
    | RetrievalResult
    | Recalled
    | Items
    | Pages
    | IndexEntries
    | MemoryStatus
    | list[str]
    | str
    | int
    | bool
    | None
)

MemoryMsg = (
    Put
    | Get
    | Delete
    | List
    | Count
    | Pin
    | Evict
    | Remember
    | Recall
    | Forget
    | ListMemories
    | PutPage
    | UpdatePage
    | GetPage
    | DeletePage
    | SearchPages
    | PageIndex
    | Retrieve
    | GetMemoryStatus
)

publish(__name__, __all__)
