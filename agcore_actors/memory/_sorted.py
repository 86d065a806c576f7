"""A sorted set in blocks: insert, remove and the start of a range scan cost
O(log n + B) instead of a plain sorted list's O(n) memory move (B = block size).

The in-memory backend keeps its ids here (prefix scans are range scans) and the
recall queue its group keys. Not thread-safe.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=_Ordered)

#: Blocks split above twice this size.
LOAD = 512


class SortedSet(Generic[K]):
    """Distinct keys in ascending order (the caller never adds a present key)."""

    __slots__ = ("_blocks", "_len", "_maxes")

    def __init__(self) -> None:
        self._blocks: list[list[K]] = []
        self._maxes: list[K] = []  # the last key of each block
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def add(self, key: K) -> None:
        """Insert ``key`` (absent)."""
        self._len += 1
        if not self._blocks:
            self._blocks.append([key])
            self._maxes.append(key)
            return
        i = bisect.bisect_left(self._maxes, key)
        if i == len(self._maxes):
            i -= 1
            self._blocks[i].append(key)
            self._maxes[i] = key
        else:
            bisect.insort(self._blocks[i], key)
        block = self._blocks[i]
        if len(block) > 2 * LOAD:
            self._blocks[i : i + 1] = [block[:LOAD], block[LOAD:]]
            self._maxes[i : i + 1] = [block[LOAD - 1], block[-1]]

    def remove(self, key: K) -> None:
        """Remove ``key`` (present)."""
        i = bisect.bisect_left(self._maxes, key)
        block = self._blocks[i]
        j = bisect.bisect_left(block, key)
        del block[j]
        self._len -= 1
        if not block:
            del self._blocks[i]
            del self._maxes[i]
        elif j == len(block):
            self._maxes[i] = block[-1]

    def iter_from(self, start: K | None = None) -> Iterator[K]:
        """Keys ``>= start`` (all if None), ascending."""
        i = 0 if start is None else bisect.bisect_left(self._maxes, start)
        if i == len(self._blocks):
            return
        block = self._blocks[i]
        j = 0 if start is None else bisect.bisect_left(block, start)
        yield from block[j:]
        for block in self._blocks[i + 1 :]:
            yield from block

    def iter_before(self, end: K | None = None) -> Iterator[K]:
        """Keys ``< end`` (all if None), descending."""
        if not self._blocks:
            return
        if end is None:
            i, j = len(self._blocks) - 1, len(self._blocks[-1])
        else:
            i = bisect.bisect_left(self._maxes, end)
            if i == len(self._blocks):
                i, j = i - 1, len(self._blocks[-1])
            else:
                j = bisect.bisect_left(self._blocks[i], end)
        yield from reversed(self._blocks[i][:j])
        for block in reversed(self._blocks[:i]):
            yield from reversed(block)
