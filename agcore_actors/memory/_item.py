"""The data model: stored items, filters and knowledge pages.

All of these are plain msgspec Structs, so they cross actor boundaries (and a
process boundary) unchanged.

Namespaces are id prefixes (``knowledge_`` for pages; a caller's own, such as
``note:{user}:``) rather than a separate column: a prefix query is a range scan on
the primary key in SQLite and a bisect in the in-memory store, and one flat key space
keeps the store protocol small. An id segment taken from outside (a user id) is
escaped before it becomes part of a prefix (see :func:`escape_segment`), so that user
``"a:b"`` never shows up under user ``"a"``. Conversations and session facts are not
memory items: they live in the session store (:mod:`agcore_actors.store`).

Timestamps are Unix seconds as floats, taken from the store's injected clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec


class MemoryItem(msgspec.Struct, frozen=True, kw_only=True):
    """One stored item, with the statistics eviction needs.

    - ``id`` is the unique key; its prefix is the namespace.
    - ``content`` is usually text or JSON text (a page) but may be anything.
    - ``metadata`` is arbitrary JSON-able data.
    - ``created_at`` drives TTL, capacity eviction and list order; an upsert
      sets it anew.
    - ``pinned`` items are never evicted and never expire.
    - ``accessed_at`` / ``access_count``: last ``get`` (or write) and how many
      ``get`` calls found the item; LRU eviction uses the access order.
    - ``recall_count`` / ``recall_score_total`` / ``recalled_at``: how often
      retrieval returned the item and with what scores; recall-based eviction
      uses them.
    """

    id: str
    content: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: float
    pinned: bool = False
    accessed_at: float
    access_count: int = 0
    recall_count: int = 0
    recall_score_total: float = 0.0
    recalled_at: float | None = None

    @property
    def recall_score_avg(self) -> float:
        return self.recall_score_total / self.recall_count if self.recall_count else 0.0


def row_item(row: Sequence[Any]) -> MemoryItem:
    """An item from a stored row: ``(id, content, metadata JSON, created_at, pinned,
    accessed_at, access_count, recall_count, recall_score_total, recalled_at)`` (the
    column order of the SQLite and PostgreSQL backends)."""
    id, content, meta, created, pinned, accessed, count, r_count, r_total, r_at = row
    return MemoryItem(
        id=id,
        content=content,
        metadata=msgspec.json.decode(meta),
        created_at=created,
        pinned=bool(pinned),
        accessed_at=accessed,
        access_count=count,
        recall_count=r_count,
        recall_score_total=r_total,
        recalled_at=r_at,
    )


class MemoryFilter(msgspec.Struct, frozen=True, kw_only=True):
    """What ``list`` returns: items whose id starts with ``prefix`` and whose
    ``created_at`` is strictly after ``since``, oldest first (ties in write
    order), then ``offset`` skipped and at most ``limit`` kept."""

    prefix: str = ""
    since: float | None = None
    offset: int = 0
    limit: int | None = None


#: The filter that lists everything.
ALL = MemoryFilter()


def escape_segment(segment: str) -> str:
    """Escape ``%`` and ``:`` so that an id segment (a user id) can sit inside a prefix.

    ``"a:b"`` becomes ``"a%3Ab"``, so no escaped id is a prefix of another
    id followed by ``:``.
    """
    return segment.replace("%", "%25").replace(":", "%3A")


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix``.

    None when there is no such bound (the empty prefix, or one ending in the
    largest code point). SQLite's BINARY collation compares UTF-8 bytes, whose
    order is the code-point order Python uses, so the bound works for both.
    """
    stripped = prefix
    while stripped:
        last = ord(stripped[-1])
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # surrogates cannot be encoded
                nxt = 0xE000
            return stripped[:-1] + chr(nxt)
        stripped = stripped[:-1]
    return None


class KnowledgePage(msgspec.Struct, frozen=True, kw_only=True):
    """A knowledge page. ``created_at`` / ``updated_at`` left as None are set by
    the store when the page is written (an update keeps ``created_at``)."""

    id: str
    title: str
    summary: str = ""
    content: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    references: list[str] = msgspec.field(default_factory=list)
    created_at: float | None = None
    updated_at: float | None = None


class PageIndexEntry(msgspec.Struct, frozen=True, kw_only=True):
    """The light view of a page that the index lists."""

    id: str
    title: str
    summary: str
    tags: list[str]
    updated_at: float | None


class ScoredPage(msgspec.Struct, frozen=True, kw_only=True):
    """A retrieved page and its score in [0, 1]."""

    page: KnowledgePage
    score: float


class RetrievalResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a retrieval returns: the pages, best first, and the query."""

    items: list[ScoredPage]
    query: str
