"""Long-term memories: short texts an agent keeps for a scope (a user, an agent) and
recalls in later sessions.

A memory is an item ``memory:{scope}:{id}`` (``scope`` escaped, see
:func:`~agcore_actors.memory._item.escape_segment`, so scope ``"a:b"`` never shows up
in scope ``"a"``); its content is the text, its metadata the tags, and its full-text
entry the text's and tags' tokens. Recall is BM25 within the scope's prefix only, each
hit rescored like the hybrid retriever (BM25 normalised to the best hit, blended with the
Dice overlap of the query and the text), and counted as a recall, which recall-based
eviction reads. Memories are items like any other: the store's eviction policy bounds
them, pinned ones stay. Knowledge retrieval never sees them (it searches ``knowledge_``).
"""

from __future__ import annotations

from typing import Any

from .._ids import new_id
from ._errors import InvalidInput
from ._item import MemoryFilter, MemoryItem, escape_segment
from ._store import MemoryBackend, check_text
from ._text import query_terms, text_overlap_dice, tokens

MEMORY_PREFIX = "memory:"
#: The longest text one memory may hold, in characters.
MAX_MEMORY_CHARS = 4000
#: How many hits BM25 proposes before the blend reorders them.
CANDIDATES = 50
BM25_WEIGHT, DICE_WEIGHT = 0.7, 0.3


def scope_prefix(scope: str) -> str:
    """The id prefix of ``scope``'s memories; :class:`InvalidInput` for an empty scope."""
    if not check_text(scope, "scope"):
        raise InvalidInput("scope must be a non-empty string")
    return f"{MEMORY_PREFIX}{escape_segment(scope)}:"


def _tags(metadata: dict[str, Any]) -> list[str]:
    tags = metadata.get("tags")
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


class Memories:
    """One store's long-term memories (synchronous; see the module doc)."""

    def __init__(self, store: MemoryBackend) -> None:
        self.store = store

    def remember(
        self, scope: str, text: str, *, tags: list[str] | None = None, pinned: bool = False
    ) -> MemoryItem:
        """Keep ``text`` for ``scope``; the stored item (its id names the memory)."""
        prefix = scope_prefix(scope)
        if not check_text(text, "text").strip():
            raise InvalidInput("a memory's text must not be empty")
        if len(text) > MAX_MEMORY_CHARS:
            raise InvalidInput(f"a memory holds at most {MAX_MEMORY_CHARS} characters")
        tags = list(tags or [])
        for tag in tags:
            check_text(tag, "tag")
        index = " ".join(tokens(" ".join([text, *tags])))
        return self.store.put(
            prefix + new_id(),
            text,
            {"scope": scope, "tags": tags},
            pinned=pinned,
            index_text=index,
        )

    def recall(
        self, scope: str, query: str, *, max_results: int = 5
    ) -> list[tuple[MemoryItem, float]]:
        """``scope``'s memories that answer ``query``, best first, with a score in [0, 1]."""
        prefix = scope_prefix(scope)
        check_text(query, "query")
        terms = query_terms(query)
        if not terms or max_results <= 0:
            return []
        hits = self.store.search(terms, prefix=prefix, limit=max(CANDIDATES, max_results))
        if not hits:
            return []
        best = hits[0][1] or 1.0
        found: list[tuple[MemoryItem, float]] = []
        for key, raw in hits:
            item = self.store.get(key)
            if item is None:
                continue
            text = " ".join([item.content, *_tags(item.metadata)])
            score = BM25_WEIGHT * raw / best + DICE_WEIGHT * text_overlap_dice(query, text)
            found.append((item, min(1.0, score)))
        found.sort(key=lambda pair: -pair[1])
        kept = found[:max_results]
        for item, score in kept:
            self.store.record_recall(item.id, score)
        return kept

    def forget(self, scope: str, id: str) -> bool:
        """Delete ``scope``'s memory ``id`` (an id from :meth:`remember`); True if it was
        there. An id of another scope is never touched."""
        prefix = scope_prefix(scope)
        if not isinstance(id, str) or not id.startswith(prefix):
            return False
        return self.store.delete(id)

    def list(self, scope: str) -> list[MemoryItem]:
        """Every memory of ``scope``, oldest first."""
        return self.store.list(MemoryFilter(prefix=scope_prefix(scope)))
