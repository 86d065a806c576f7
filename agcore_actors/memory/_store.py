"""The store protocol and the in-memory store.

A store is *synchronous*: it is the core the :class:`MemoryStore` actor runs
(for SQLite, in a worker thread), and the part the stateful tests drive
directly. Stores are not thread-safe; one caller at a time.

Semantics every store implements (the tests hold both to one model):

- ``put`` is an upsert. It sets ``created_at`` (given, or the clock's now),
  makes the item the most recently written and used, and keeps the access
  and recall statistics and the pinned flag of an existing visible item
  (``pinned=None``); an expired item is replaced as if it were new.
- ``get`` returns a visible item and counts an access; ``list``, ``count``,
  ``keys`` and ``search`` do not.
- An expired item is invisible everywhere at once (see ``_eviction``).
- Writes run the eviction rules of the store's :class:`EvictionConfig`.
- ``batch()`` groups writes into one transaction (nestable; the outermost
  one commits). Durability of the SQLite store is per committed transaction.
"""

from __future__ import annotations

import bisect
import builtins
import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import msgspec

from ._bm25 import Bm25Index
from ._errors import InvalidInput, NotFound
from ._eviction import (
    EvictionConfig,
    ItemStats,
    choose_victims,
    is_expired,
    sweep_due,
)
from ._item import ALL, MemoryFilter, MemoryItem

Clock = Callable[[], float]


class MemoryBackend(Protocol):
    """What the memory layer needs from a store (see the module doc)."""

    @property
    def eviction(self) -> EvictionConfig: ...

    def now(self) -> float: ...

    def put(
        self,
        id: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        *,
        created_at: float | None = None,
        pinned: bool | None = None,
        index_text: str | None = None,
    ) -> MemoryItem:
        """Upsert; ``index_text`` (space-separated tokens) puts the item in the
        full-text index, None takes it out."""
        ...

    def get(self, id: str) -> MemoryItem | None: ...

    def delete(self, id: str) -> bool:
        """Remove; True if a visible item was removed. Idempotent."""
        ...

    def list(self, flt: MemoryFilter = ...) -> builtins.list[MemoryItem]: ...

    def count(self, prefix: str = "") -> int: ...

    def keys(
        self, prefix: str = "", *, limit: int | None = None, reverse: bool = False
    ) -> builtins.list[str]:
        """Visible ids with ``prefix``, in id order (or reversed)."""
        ...

    def set_pinned(self, id: str, pinned: bool) -> MemoryItem:
        """Pin or unpin a visible item; :class:`NotFound` otherwise."""
        ...

    def record_recall(self, id: str, score: float) -> None:
        """Count that retrieval returned the item with ``score``."""
        ...

    def evict(self) -> builtins.list[str]:
        """Run a full sweep now; the ids removed."""
        ...

    def search(
        self, terms: Sequence[str], *, prefix: str = "", limit: int = 10
    ) -> builtins.list[tuple[str, float]]:
        """BM25 over indexed visible items with ``prefix``: (id, score), best first."""
        ...

    def batch(self) -> contextlib.AbstractContextManager[None]: ...

    def close(self) -> None: ...


def check_text(value: object, what: str) -> str:
    """``value`` if it is a string that can be stored (UTF-8 encodable: no lone
    surrogate); :class:`InvalidInput` naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} cannot be stored: {exc.reason} at {exc.start}") from None
    return value


def check_put(
    id: str, content: str, metadata: dict[str, Any] | None, created_at: float | None
) -> bytes:
    """Validate a put's arguments; the metadata as JSON. Raises InvalidInput."""
    if not check_text(id, "id"):
        raise InvalidInput("id must be a non-empty string")
    check_text(content, "content")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInput("metadata must be a dict")
    if created_at is not None and not math.isfinite(created_at):
        raise InvalidInput(f"created_at must be a finite number, not {created_at!r}")
    return encode_json(metadata or {}, "metadata")


def encode_json(value: object, what: str) -> bytes:
    """``value`` as JSON; :class:`InvalidInput` naming ``what`` if it has no JSON form."""
    try:
        return msgspec.json.encode(value)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        # UnicodeEncodeError is a ValueError: a lone surrogate in a string.
        raise InvalidInput(f"{what} cannot be stored as JSON: {exc}") from None


class _Row:
    __slots__ = (
        "access_count",
        "access_seq",
        "accessed_at",
        "content",
        "created_at",
        "id",
        "metadata",
        "pinned",
        "recall_count",
        "recall_score_total",
        "recalled_at",
        "seq",
    )

    def __init__(self, id: str, content: str, metadata: bytes, created_at: float) -> None:
        self.id = id
        self.content = content
        self.metadata = metadata
        self.created_at = created_at
        self.seq = 0
        self.pinned = False
        self.accessed_at = created_at
        self.access_seq = 0
        self.access_count = 0
        self.recall_count = 0
        self.recall_score_total = 0.0
        self.recalled_at: float | None = None

    def item(self) -> MemoryItem:
        return MemoryItem(
            id=self.id,
            content=self.content,
            metadata=msgspec.json.decode(self.metadata),
            created_at=self.created_at,
            pinned=self.pinned,
            accessed_at=self.accessed_at,
            access_count=self.access_count,
            recall_count=self.recall_count,
            recall_score_total=self.recall_score_total,
            recalled_at=self.recalled_at,
        )

    def stats(self) -> ItemStats:
        return ItemStats(
            self.id,
            self.created_at,
            self.seq,
            self.access_seq,
            self.pinned,
            self.recall_count,
            self.recall_score_total,
            self.recalled_at,
        )


def delete_prefix(store: MemoryBackend, prefix: str) -> int:
    """Delete every item whose id starts with ``prefix``, in one batch; how many."""
    with store.batch():
        ids = store.keys(prefix)
        for id in ids:
            store.delete(id)
    return len(ids)


class InMemoryBackend:
    """A dict-backed store; nothing survives the process.

    Prefix queries bisect a sorted id list. A capacity bound costs a scan of
    the items when a write exceeds it (fine for the sizes an in-memory store
    is for; the SQLite store uses indexes instead).
    """

    def __init__(self, eviction: EvictionConfig | None = None, *, clock: Clock = time.time) -> None:
        self._eviction = eviction or EvictionConfig()
        self._clock = clock
        self._rows: dict[str, _Row] = {}
        self._ids: builtins.list[str] = []  # sorted
        self._index = Bm25Index()
        self._seq = 0
        self._writes = 0
        self._unpinned = 0

    @property
    def eviction(self) -> EvictionConfig:
        return self._eviction

    def now(self) -> float:
        return self._clock()

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _visible(self, row: _Row | None, now: float) -> bool:
        return row is not None and not is_expired(
            self._eviction.policy, row.created_at, row.pinned, now
        )

    def put(
        self,
        id: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        *,
        created_at: float | None = None,
        pinned: bool | None = None,
        index_text: str | None = None,
    ) -> MemoryItem:
        meta = check_put(id, content, metadata, created_at)
        now = self.now()
        old = self._rows.get(id)
        row = _Row(id, content, meta, now if created_at is None else created_at)
        if old is not None and self._visible(old, now):
            row.pinned = old.pinned
            row.access_count = old.access_count
            row.recall_count = old.recall_count
            row.recall_score_total = old.recall_score_total
            row.recalled_at = old.recalled_at
        if pinned is not None:
            row.pinned = pinned
        row.seq = self._next_seq()
        row.accessed_at = now
        row.access_seq = self._next_seq()
        if old is None:
            bisect.insort(self._ids, id)
        elif not old.pinned:
            self._unpinned -= 1
        if not row.pinned:
            self._unpinned += 1
        self._rows[id] = row
        if index_text is None:
            self._index.remove(id)
        else:
            self._index.add(id, index_text.split())
        item = row.item()
        self._after_write()
        return item

    def _after_write(self) -> None:
        self._writes += 1
        if sweep_due(self._eviction, self._writes, self._unpinned):
            self.evict()

    def get(self, id: str) -> MemoryItem | None:
        row = self._rows.get(id)
        now = self.now()
        if row is None or not self._visible(row, now):
            return None
        row.accessed_at = now
        row.access_seq = self._next_seq()
        row.access_count += 1
        return row.item()

    def _remove(self, id: str) -> None:
        row = self._rows.pop(id)
        del self._ids[bisect.bisect_left(self._ids, id)]
        self._index.remove(id)
        if not row.pinned:
            self._unpinned -= 1

    def delete(self, id: str) -> bool:
        row = self._rows.get(id)
        if row is None:
            return False
        visible = self._visible(row, self.now())
        self._remove(id)
        return visible

    def _prefixed(self, prefix: str) -> builtins.list[str]:
        lo = bisect.bisect_left(self._ids, prefix)
        hi = lo
        while hi < len(self._ids) and self._ids[hi].startswith(prefix):
            hi += 1
        return self._ids[lo:hi]

    def list(self, flt: MemoryFilter = ALL) -> builtins.list[MemoryItem]:
        if flt.offset < 0 or (flt.limit is not None and flt.limit < 0):
            raise InvalidInput("offset and limit must be >= 0")
        now = self.now()
        rows = [self._rows[i] for i in self._prefixed(flt.prefix)]
        rows = [
            r
            for r in rows
            if self._visible(r, now) and (flt.since is None or r.created_at > flt.since)
        ]
        rows.sort(key=lambda r: (r.created_at, r.seq))
        end = None if flt.limit is None else flt.offset + flt.limit
        return [r.item() for r in rows[flt.offset : end]]

    def keys(
        self, prefix: str = "", *, limit: int | None = None, reverse: bool = False
    ) -> builtins.list[str]:
        now = self.now()
        ids = self._prefixed(prefix)
        if reverse:
            ids.reverse()
        out = [i for i in ids if self._visible(self._rows[i], now)]
        return out if limit is None else out[:limit]

    def count(self, prefix: str = "") -> int:
        return len(self.keys(prefix))

    def set_pinned(self, id: str, pinned: bool) -> MemoryItem:
        row = self._rows.get(id)
        if row is None or not self._visible(row, self.now()):
            raise NotFound(id)
        if row.pinned != pinned:
            self._unpinned += -1 if pinned else 1
            row.pinned = pinned
        item = row.item()
        self._after_write()
        return item

    def record_recall(self, id: str, score: float) -> None:
        row = self._rows.get(id)
        now = self.now()
        if row is None or not self._visible(row, now):
            return
        row.recall_count += 1
        row.recall_score_total += score
        row.recalled_at = now

    def evict(self) -> builtins.list[str]:
        self._writes = 0
        now = self.now()
        policy = self._eviction.policy
        victims = choose_victims(policy, (r.stats() for r in self._rows.values()), now)
        for victim in victims:
            self._remove(victim)
        return victims

    def search(
        self, terms: Sequence[str], *, prefix: str = "", limit: int = 10
    ) -> builtins.list[tuple[str, float]]:
        now = self.now()
        return self._index.search(
            terms,
            limit,
            lambda i: i.startswith(prefix) and self._visible(self._rows.get(i), now),
        )

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        yield

    def close(self) -> None:
        pass
