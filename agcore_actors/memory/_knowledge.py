"""KnowledgeStore: knowledge pages over a store.

Pages are items ``knowledge_{page.id}`` whose content is the page as JSON and
whose full-text entry is the page's tokens (title, summary, tags, content),
which is what BM25 retrieval searches.

The store is the index, so ``get_index`` and ``search`` always see every
stored page, including pages written by another KnowledgeStore over the same
store or before a restart (:meth:`rebuild_index` only counts them). ``search``
matches ``content`` too. An update keeps the page's ``created_at`` (and its
place in index order); ``updated_at`` left as None is set to now.
"""

from __future__ import annotations

import msgspec

from ._errors import InvalidInput, NotFound, SerializationError
from ._item import KnowledgePage, MemoryFilter, MemoryItem, PageIndexEntry
from ._store import MemoryBackend, check_text, encode_json
from ._text import matches_any, page_index_text

KNOWLEDGE_PREFIX = "knowledge_"

_decoder = msgspec.json.Decoder(KnowledgePage)


def decode_page(item: MemoryItem) -> KnowledgePage:
    try:
        return _decoder.decode(item.content)
    except msgspec.DecodeError as exc:
        raise SerializationError(f"{item.id}: not a knowledge page: {exc}") from None


class KnowledgeStore:
    """Knowledge pages over a store (synchronous; see module doc)."""

    def __init__(self, store: MemoryBackend) -> None:
        self.store = store

    def add_page(self, page: KnowledgePage) -> KnowledgePage:
        """Insert or replace a page; returns it with its timestamps set."""
        if not check_text(page.id, "page.id"):
            raise InvalidInput("page.id is empty")
        key = KNOWLEDGE_PREFIX + page.id
        with self.store.batch():
            now = self.store.now()
            created = page.created_at
            if created is None:
                old = self.store.peek(key)
                old_page = None if old is None else decode_page(old)
                created = (old_page.created_at if old_page else None) or now
            stored = msgspec.structs.replace(
                page,
                created_at=created,
                updated_at=now if page.updated_at is None else page.updated_at,
            )
            self.store.put(
                key,
                encode_json(stored, "the page").decode(),
                created_at=created,
                index_text=page_index_text(stored),
            )
        return stored

    def get_page(self, id: str) -> KnowledgePage | None:
        item = self.store.get(KNOWLEDGE_PREFIX + id)
        return None if item is None else decode_page(item)

    def update_page(self, page: KnowledgePage) -> KnowledgePage:
        """Replace an existing page; :class:`NotFound` if there is none."""
        if not isinstance(page.id, str) or not page.id:
            raise InvalidInput("page.id is empty")
        with self.store.batch():
            # keys() is in id order, so the page's own id comes first if present.
            key = KNOWLEDGE_PREFIX + page.id
            if self.store.keys(key, limit=1) != [key]:
                raise NotFound(page.id)
            return self.add_page(page)

    def delete_page(self, id: str) -> bool:
        return self.store.delete(KNOWLEDGE_PREFIX + id)

    def pages(self) -> list[KnowledgePage]:
        """Every page, in index order (oldest ``created_at`` first)."""
        return [decode_page(i) for i in self.store.list(MemoryFilter(prefix=KNOWLEDGE_PREFIX))]

    def get_index(self) -> list[PageIndexEntry]:
        return [
            PageIndexEntry(
                id=p.id, title=p.title, summary=p.summary, tags=p.tags, updated_at=p.updated_at
            )
            for p in self.pages()
        ]

    def rebuild_index(self) -> int:
        """There is no separate index to rebuild: the number of pages."""
        return self.store.count(KNOWLEDGE_PREFIX)

    def search(self, query: str) -> list[KnowledgePage]:
        """Pages where ``query`` is a case-insensitive substring of the title,
        summary, content or a tag, in index order. An empty query finds nothing."""
        if not query:
            return []
        needle = [query.lower()]
        return [p for p in self.pages() if matches_any(p, needle) is not None]
