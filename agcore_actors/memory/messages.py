"""The MemoryStore actor's protocol: every message it accepts and its reply.

Items (the generic store)::

    Put(id, content, metadata, created_at, pinned) -> MemoryItem
    Get(id)                   -> MemoryItem | None     (counts an access)
    Delete(id)                -> bool                  (True if it was there)
    List(filter)              -> Items
    Count(prefix)             -> int
    Pin(id, pinned)           -> MemoryItem            (NotFound if absent)
    Evict()                   -> list[str]             (ids removed by a sweep now)

Conversation (one transcript per session id)::

    Append(session_id, messages)         -> list[int]           (their indexes)
    History(session_id)                  -> Messages
    ReplaceHistory(session_id, messages) -> None                (e.g. after compaction)
    ClearHistory(session_id)             -> int
    ExportTranscript(session_id)         -> str                 (JSON Lines)
    ImportTranscript(session_id, jsonl, replace) -> int         (messages imported)

Knowledge and retrieval::

    PutPage(page)        -> KnowledgePage   (insert or replace)
    UpdatePage(page)     -> KnowledgePage   (NotFound if absent)
    GetPage(id)          -> KnowledgePage | None
    DeletePage(id)       -> bool
    SearchPages(query)   -> Pages           (substring search)
    PageIndex()          -> IndexEntries
    Retrieve(query, max_results, min_score, mode) -> RetrievalResult

Session key/value memory::

    FactSet(session_id, key, value) -> None
    FactGet(session_id, key)        -> str | None
    FactRemove(session_id, key)     -> bool
    FactClear(session_id)           -> int
    FactSnapshot(session_id)        -> str   (the <session-context> block)

Lists of structs come wrapped in a reply struct (``Items``, ``Messages``,
``Pages``, ``IndexEntries``), so a reply can gain fields (a cursor, a total)
without changing its type.

Errors: :class:`InvalidInput`, :class:`NotFound`, :class:`SerializationError`
and :class:`RetrievalError` are the asker's (the actor carries on, nothing was
changed). :class:`StorageError` crashes the actor: its supervisor restarts it,
which reopens the database.

Every write is committed (durable, see ``SqliteBackend``) before its reply is
sent. A write whose asker is cancelled or times out either completes (and
stays) or never started: the store's worker thread is not interrupted mid
transaction.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..actor import Request
from ._item import (
    ChatMessage,
    KnowledgePage,
    MemoryFilter,
    MemoryItem,
    PageIndexEntry,
    RetrievalResult,
)
from ._retriever import RetrievalMode

# -- replies that carry lists of structs ----------------------------------------


class Items(msgspec.Struct, frozen=True):
    items: list[MemoryItem]


class Messages(msgspec.Struct, frozen=True):
    messages: list[ChatMessage]


class Pages(msgspec.Struct, frozen=True):
    pages: list[KnowledgePage]


class IndexEntries(msgspec.Struct, frozen=True):
    entries: list[PageIndexEntry]


# -- items ----------------------------------------------------------------------


class Put(Request[MemoryItem], frozen=True, tag=True, kw_only=True):
    id: str
    content: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    #: None: the store's clock.
    created_at: float | None = None
    #: None: keep an existing item's flag (False for a new one).
    pinned: bool | None = None


class Get(Request[MemoryItem | None], frozen=True, tag=True):
    id: str


class Delete(Request[bool], frozen=True, tag=True):
    id: str


class List(Request[Items], frozen=True, tag=True):
    filter: MemoryFilter = MemoryFilter()


class Count(Request[int], frozen=True, tag=True):
    prefix: str = ""


class Pin(Request[MemoryItem], frozen=True, tag=True):
    id: str
    pinned: bool = True


class Evict(Request[list[str]], frozen=True, tag=True):
    pass


class Sweep(msgspec.Struct, frozen=True, tag=True):
    """Told by the actor to itself on its sweep schedule."""


# -- conversation ---------------------------------------------------------------


class Append(Request[list[int]], frozen=True, tag=True):
    session_id: str
    messages: list[ChatMessage]


class History(Request[Messages], frozen=True, tag=True):
    session_id: str


class ReplaceHistory(Request[None], frozen=True, tag=True):
    session_id: str
    messages: list[ChatMessage]


class ClearHistory(Request[int], frozen=True, tag=True):
    session_id: str


class ExportTranscript(Request[str], frozen=True, tag=True):
    session_id: str


class ImportTranscript(Request[int], frozen=True, tag=True):
    session_id: str
    jsonl: str
    #: True: the import replaces the transcript; False: it is appended.
    replace: bool = False


# -- knowledge ------------------------------------------------------------------


class PutPage(Request[KnowledgePage], frozen=True, tag=True):
    page: KnowledgePage


class UpdatePage(Request[KnowledgePage], frozen=True, tag=True):
    page: KnowledgePage


class GetPage(Request[KnowledgePage | None], frozen=True, tag=True):
    id: str


class DeletePage(Request[bool], frozen=True, tag=True):
    id: str


class SearchPages(Request[Pages], frozen=True, tag=True):
    query: str


class PageIndex(Request[IndexEntries], frozen=True, tag=True):
    pass


class Retrieve(Request[RetrievalResult], frozen=True, tag=True, kw_only=True):
    query: str
    #: None: the actor's configured value.
    max_results: int | None = None
    min_score: float | None = None
    mode: RetrievalMode | None = None


# -- session memory -------------------------------------------------------------


class FactSet(Request[None], frozen=True, tag=True):
    session_id: str
    key: str
    value: str


class FactGet(Request[str | None], frozen=True, tag=True):
    session_id: str
    key: str


class FactRemove(Request[bool], frozen=True, tag=True):
    session_id: str
    key: str


class FactClear(Request[int], frozen=True, tag=True):
    session_id: str


class FactSnapshot(Request[str], frozen=True, tag=True):
    session_id: str


MemoryMsg = (
    Put
    | Get
    | Delete
    | List
    | Count
    | Pin
    | Evict
    | Sweep
    | Append
    | History
    | ReplaceHistory
    | ClearHistory
    | ExportTranscript
    | ImportTranscript
    | PutPage
    | UpdatePage
    | GetPage
    | DeletePage
    | SearchPages
    | PageIndex
    | Retrieve
    | FactSet
    | FactGet
    | FactRemove
    | FactClear
    | FactSnapshot
)
