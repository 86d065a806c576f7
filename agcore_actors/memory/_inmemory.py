"""The in-memory backend: a dict of rows; nothing survives the process.

Costs, with n items: a put, get, delete or pin is O(log n) amortised, eviction
included (the next victim comes from a queue, see ``_queues``; an expired row
from the front of the age queue); a prefix scan is O(log n + m) for m ids under
the prefix (ids are kept in blocks, see ``_sorted``).

``batch()`` is a transaction: the first change to each id inside it keeps the
row as it was, and an exception restores every such row and the counters, so
the batch leaves nothing behind (the same guarantee as the SQLite backend's).
"""

from __future__ import annotations

import builtins
import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from ._bm25 import Bm25Index
from ._errors import InvalidInput, NotFound
from ._eviction import (
    EvictionConfig,
    ItemStats,
    expiry_cutoff,
    is_expired,
    max_items_of,
    sweep_due,
)
from ._item import ALL, MemoryFilter, MemoryItem, prefix_upper_bound
from ._queues import queue_for
from ._sorted import SortedSet
from ._store import BackendBase, Clock, check_put


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
        "terms",
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
        self.terms: list[str] | None = None  # in the full-text index when not None

    def copy(self) -> _Row:
        row = _Row.__new__(_Row)
        for name in _Row.__slots__:
            setattr(row, name, getattr(self, name))
        return row

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


class InMemoryBackend(BackendBase):
    """A dict-backed store; nothing survives the process (see the module doc)."""

    def __init__(self, eviction: EvictionConfig | None = None, *, clock: Clock = time.time) -> None:
        self._eviction = eviction or EvictionConfig()
        self._clock = clock
        self._rows: dict[str, _Row] = {}
        self._ids: SortedSet[str] = SortedSet()
        self._index = Bm25Index()
        self._queue = queue_for(self._eviction.policy, self._rows)
        self._seq = 0
        self._writes = 0
        self._unpinned = 0
        #: Inside a batch: id -> the row before the batch changed it (None: absent).
        self._journal: dict[str, _Row | None] | None = None

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _visible(self, row: _Row | None, now: float) -> bool:
        return row is not None and not is_expired(
            self._eviction.policy, row.created_at, row.pinned, now
        )

    # -- changes (every one goes through these three) ---------------------------

    def _keep(self, id: str) -> None:
        """Inside a batch, remember ``id``'s row before its first change."""
        if self._journal is not None and id not in self._journal:
            row = self._rows.get(id)
            self._journal[id] = None if row is None else row.copy()

    def _insert(self, row: _Row) -> None:
        old = self._rows.get(row.id)
        if old is None:
            self._ids.add(row.id)
        else:
            self._unpinned -= not old.pinned
        self._rows[row.id] = row
        self._unpinned += not row.pinned
        if row.terms is None:
            self._index.remove(row.id)
        else:
            self._index.add(row.id, row.terms)
        self._queue.push(row)

    def _remove(self, id: str) -> None:
        row = self._rows.pop(id)
        self._ids.remove(id)
        self._index.remove(id)
        self._unpinned -= not row.pinned

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """A transaction around the block (nested blocks join the outer one)."""
        if self._journal is not None:
            yield
            return
        saved = (self._seq, self._writes)
        self._journal = {}
        try:
            yield
        except BaseException:
            journal, self._journal = self._journal, None
            for id, old in journal.items():
                if id in self._rows:
                    self._remove(id)
                if old is not None:
                    self._insert(old)
            self._seq, self._writes = saved
            raise
        finally:
            self._journal = None

    # -- writes -------------------------------------------------------------------

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
        row.terms = None if index_text is None else index_text.split()
        self._keep(id)
        self._insert(row)
        item = row.item()
        self._after_write()
        return item

    def _after_write(self) -> None:
        self._writes += 1
        if sweep_due(self._eviction, self._writes, self._unpinned):
            self.evict()

    def delete(self, id: str) -> bool:
        row = self._rows.get(id)
        if row is None:
            return False
        visible = self._visible(row, self.now())
        self._keep(id)
        self._remove(id)
        return visible

    def set_pinned(self, id: str, pinned: bool) -> MemoryItem:
        row = self._rows.get(id)
        if row is None or not self._visible(row, self.now()):
            raise NotFound(id)
        if row.pinned != pinned:
            self._keep(id)
            self._unpinned += -1 if pinned else 1
            row.pinned = pinned
            self._queue.push(row)
        item = row.item()
        self._after_write()
        return item

    def record_recall(self, id: str, score: float) -> None:
        row = self._rows.get(id)
        now = self.now()
        if row is None or not self._visible(row, now):
            return
        self._keep(id)
        row.recall_count += 1
        row.recall_score_total += score
        row.recalled_at = now
        self._queue.touched(row, "recall")

    def evict(self) -> builtins.list[str]:
        self._writes = 0
        now = self.now()
        policy = self._eviction.policy
        victims: builtins.list[str] = []
        cutoff = expiry_cutoff(policy, now)
        if cutoff is not None:
            expired = sorted(row.id for row in self._queue.pop_expired(cutoff))
            for id in expired:
                self._keep(id)
                self._remove(id)
            victims.extend(expired)
        cap = max_items_of(policy)
        while cap is not None and self._unpinned > cap:
            row = self._queue.victim(now)
            assert row is not None, "an unpinned row is in the queue"
            self._keep(row.id)
            self._remove(row.id)
            victims.append(row.id)
        return victims

    # -- reads --------------------------------------------------------------------

    def get(self, id: str) -> MemoryItem | None:
        row = self._rows.get(id)
        now = self.now()
        if row is None or not self._visible(row, now):
            return None
        self._keep(id)
        row.accessed_at = now
        row.access_seq = self._next_seq()
        row.access_count += 1
        self._queue.touched(row, "use")
        return row.item()

    def peek(self, id: str) -> MemoryItem | None:
        row = self._rows.get(id)
        return row.item() if row is not None and self._visible(row, self.now()) else None

    def _prefixed(self, prefix: str, reverse: bool = False) -> Iterator[str]:
        if reverse:
            for id in self._ids.iter_before(prefix_upper_bound(prefix) if prefix else None):
                if not id.startswith(prefix):
                    return
                yield id
            return
        for id in self._ids.iter_from(prefix or None):
            if not id.startswith(prefix):
                return
            yield id

    def list(self, flt: MemoryFilter = ALL) -> builtins.list[MemoryItem]:
        if flt.offset < 0 or (flt.limit is not None and flt.limit < 0):
            raise InvalidInput("offset and limit must be >= 0")
        now = self.now()
        rows = [
            row
            for id in self._prefixed(flt.prefix)
            if self._visible(row := self._rows[id], now)
            and (flt.since is None or row.created_at > flt.since)
        ]
        rows.sort(key=lambda r: (r.created_at, r.seq))
        end = None if flt.limit is None else flt.offset + flt.limit
        return [r.item() for r in rows[flt.offset : end]]

    def keys(
        self, prefix: str = "", *, limit: int | None = None, reverse: bool = False
    ) -> builtins.list[str]:
        now = self.now()
        out: builtins.list[str] = []
        for id in self._prefixed(prefix, reverse):
            if limit is not None and len(out) >= limit:
                break
            if self._visible(self._rows[id], now):
                out.append(id)
        return out

    def count(self, prefix: str = "") -> int:
        return len(self.keys(prefix))

    def search(
        self, terms: Sequence[str], *, prefix: str = "", limit: int = 10
    ) -> builtins.list[tuple[str, float]]:
        now = self.now()
        return self._index.search(
            terms,
            limit,
            lambda i: i.startswith(prefix) and self._visible(self._rows.get(i), now),
        )

    def close(self) -> None:
        pass
