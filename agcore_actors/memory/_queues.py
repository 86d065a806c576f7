"""Eviction queues of the in-memory backend: the next victim in O(log n).

Each queue orders the unpinned rows the way :func:`eviction_order` does and
answers "which row goes next" without a scan. Rows are the backend's mutable
records; a queue holds heap entries that name a row and the key it had when the
entry was pushed. The backend pushes a row again whenever its key changes (a
write, a use, a recall, an unpin); an entry whose row is gone, pinned, or has
another key since is stale and dropped when it reaches the top (lazy deletion).
When stale entries outnumber the rows, the heap is rebuilt (amortised O(1)).

The choice is exactly :func:`choose_victims`' (the stateful tests hold the
backend to a model that sorts everything), only cheaper:

- age (``Capacity``, ``Hybrid``, and the TTL of ``Ttl``/``Hybrid``): a heap on
  ``(created_at, seq)``; expired rows are a prefix of it;
- use (``Lru``): a heap on ``access_seq``;
- recall (``RecallBased``): ``value = a + recency_weight · recency`` where
  ``a = ln(1 + recalls)·recall_weight + mean score·score_weight`` is fixed between
  recalls and ``recency`` in (0, 1] grows with the last use. Rows are grouped by
  ``a`` (groups in ascending order), each group a heap on the last use, so the
  smallest value of a group is at its top. Groups are visited in ascending ``a``
  until ``a`` exceeds the best value found: no later row can be lower. Cost: the
  groups whose ``a`` lies within ``recency_weight`` of the lowest (one group, all
  the never-recalled rows, in the common case). One departure from the sort, in
  a corner floats make: two rows of one group whose values differ by less than
  the float resolution (last uses closer than ``half_life · 1e-16``) tie in the
  sort, which then takes the older ``created_at``; here the older last use goes.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from ._eviction import (
    Capacity,
    EvictionPolicy,
    Hybrid,
    ItemStats,
    Lru,
    RecallBased,
    Ttl,
    recall_base,
    recall_value,
)
from ._sorted import SortedSet


class Row(Protocol):
    """What a queue reads of a backend's row."""

    id: str
    created_at: float
    seq: int
    access_seq: int
    pinned: bool
    recall_count: int
    recall_score_total: float
    recalled_at: float | None

    def stats(self) -> ItemStats: ...


class EvictionQueue(Protocol):
    def push(self, row: Row) -> None:
        """Enter ``row``: written, or unpinned."""

    def touched(self, row: Row, what: Literal["use", "recall"]) -> None:
        """``row`` was used (a get) or recalled: enter it again if that moves it."""

    def pop_expired(self, cutoff: float) -> list[Row]:
        """Remove and return the unpinned rows with ``created_at <= cutoff``."""

    def victim(self, now: float) -> Row | None:
        """The unpinned row that eviction takes next at ``now`` (left in place)."""


class NoQueue:
    """For a policy without a capacity or a TTL: nothing is ever chosen."""

    def push(self, row: Row) -> None:
        pass

    def touched(self, row: Row, what: Literal["use", "recall"]) -> None:
        pass

    def pop_expired(self, cutoff: float) -> list[Row]:
        return []

    def victim(self, now: float) -> Row | None:
        return None


_Entry = tuple[Any, int, Row]  # key, a unique number (rows never compare), row


class _HeapQueue:
    """A heap of ``(key, n, row)`` with lazy deletion."""

    def __init__(
        self,
        rows: Mapping[str, Row],
        key: Callable[[Row], Any],
        *,
        moved_by_use: bool = False,
        expires: bool = False,
    ) -> None:
        self._rows = rows
        self._key = key
        self._moved_by_use = moved_by_use
        self._expires = expires
        self._heap: list[_Entry] = []
        self._count = itertools.count()

    def _valid(self, entry: _Entry) -> bool:
        key, _, row = entry
        return self._rows.get(row.id) is row and not row.pinned and self._key(row) == key

    def push(self, row: Row) -> None:
        if not row.pinned:
            heapq.heappush(self._heap, (self._key(row), next(self._count), row))
            if len(self._heap) > 2 * len(self._rows) + 64:
                self._rebuild()

    def touched(self, row: Row, what: Literal["use", "recall"]) -> None:
        if what == "use" and self._moved_by_use:
            self.push(row)

    def _rebuild(self) -> None:
        self._heap = [
            (self._key(r), next(self._count), r) for r in self._rows.values() if not r.pinned
        ]
        heapq.heapify(self._heap)

    def _top(self) -> Row | None:
        heap = self._heap
        while heap and not self._valid(heap[0]):
            heapq.heappop(heap)
        return heap[0][2] if heap else None

    def victim(self, now: float) -> Row | None:
        return self._top()

    def pop_expired(self, cutoff: float) -> list[Row]:
        out: dict[str, Row] = {}  # a row pushed twice with one key has two entries
        while self._expires and (row := self._top()) is not None and row.created_at <= cutoff:
            heapq.heappop(self._heap)
            out[row.id] = row
        return list(out.values())


def age_queue(rows: Mapping[str, Row]) -> _HeapQueue:
    """Oldest ``(created_at, seq)`` first; the expired rows are its front."""
    return _HeapQueue(rows, lambda r: (r.created_at, r.seq), expires=True)


def use_queue(rows: Mapping[str, Row]) -> _HeapQueue:
    """Least recently used first."""
    return _HeapQueue(rows, lambda r: r.access_seq, moved_by_use=True)


class RecallQueue:
    """Rows grouped by their fixed part ``a`` (see the module doc)."""

    def __init__(self, rows: Mapping[str, Row], policy: RecallBased) -> None:
        self._rows = rows
        self._policy = policy
        # With a recency weight, a group's values grow with the last use, and
        # rows with the same last use tie, broken by age: the heap key is that
        # order. Without one, every row of a group ties: the key is the age.
        self._by_use = policy.recency_weight > 0
        self._groups: dict[float, list[_Entry]] = {}
        self._keys: SortedSet[float] = SortedSet()
        self._entries = 0
        self._count = itertools.count()

    def _a(self, row: Row) -> float:
        return recall_base(self._policy, row.recall_count, row.recall_score_total)

    @staticmethod
    def _last(row: Row) -> float:
        return row.created_at if row.recalled_at is None else max(row.created_at, row.recalled_at)

    def _key(self, row: Row) -> tuple[float, ...]:
        age = (row.created_at, row.seq)
        return (self._last(row), *age) if self._by_use else age

    def _valid(self, a: float, entry: _Entry) -> bool:
        key, _, row = entry
        return (
            self._rows.get(row.id) is row
            and not row.pinned
            and self._a(row) == a
            and self._key(row) == key
        )

    def push(self, row: Row) -> None:
        if row.pinned:
            return
        a = self._a(row)
        group = self._groups.get(a)
        if group is None:
            group = self._groups[a] = []
            self._keys.add(a)
        heapq.heappush(group, (self._key(row), next(self._count), row))
        self._entries += 1
        if self._entries > 2 * len(self._rows) + 64:
            self._rebuild()

    def touched(self, row: Row, what: Literal["use", "recall"]) -> None:
        if what == "recall":
            self.push(row)

    def _rebuild(self) -> None:
        self._groups, self._keys, self._entries = {}, SortedSet(), 0
        for row in list(self._rows.values()):
            self.push(row)

    def pop_expired(self, cutoff: float) -> list[Row]:
        return []  # no TTL with RecallBased

    def _group_min(self, a: float, now: float) -> tuple[tuple[float, float, int], Row] | None:
        """The smallest ``(value, created_at, seq)`` of group ``a``, and its row."""
        group = self._groups[a]
        while group and not self._valid(a, group[0]):
            heapq.heappop(group)
            self._entries -= 1
        if not group:
            return None
        row = group[0][2]
        best = (recall_value(self._policy, row.stats(), now), row.created_at, row.seq)
        if not self._by_use or self._last(row) < now:
            return best, row
        # The top's last use is now or later: recency is 1 for it and for every
        # row after it, so they all tie and the oldest wins. (Rare: a row
        # written or recalled at this very instant, or dated in the future.)
        for entry in group:
            other = entry[2]
            if self._valid(a, entry) and (other.created_at, other.seq) < best[1:]:
                best, row = (best[0], other.created_at, other.seq), other
        return best, row

    def victim(self, now: float) -> Row | None:
        best: tuple[float, float, int] | None = None
        chosen: Row | None = None
        empty: list[float] = []
        for a in self._keys.iter_from():
            if best is not None and a > best[0]:
                break  # every row from here on has value >= a > best
            found = self._group_min(a, now)
            if found is None:
                empty.append(a)
            elif best is None or found[0] < best:
                best, chosen = found
        for a in empty:
            del self._groups[a]
            self._keys.remove(a)
        return chosen


def queue_for(policy: EvictionPolicy, rows: Mapping[str, Row]) -> EvictionQueue:
    """The queue that orders ``rows`` for ``policy``."""
    if isinstance(policy, Lru):
        return use_queue(rows)
    if isinstance(policy, RecallBased):
        return RecallQueue(rows, policy)
    if isinstance(policy, Capacity | Ttl) or (
        isinstance(policy, Hybrid) and (policy.ttl is not None or policy.max_items is not None)
    ):
        return age_queue(rows)
    return NoQueue()
