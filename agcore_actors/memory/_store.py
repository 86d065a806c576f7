"""The backend protocol, and the input checks every backend applies.

A backend is *synchronous*: it is the core the :class:`MemoryStore` actor runs
(for SQLite, in a worker thread), and the part the stateful tests drive
directly. Backends are not thread-safe; one caller at a time.

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
  one commits): an exception inside it undoes every change it made, in both
  backends. Durability of the SQLite backend is per committed transaction.
"""

from __future__ import annotations

import builtins
import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec

from ._errors import InvalidInput
from ._eviction import (
    EvictionConfig,
)
from ._item import MemoryFilter, MemoryItem

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

    def get(self, id: str) -> MemoryItem | None:
        """The visible item ``id``, counting an access; None if absent or expired."""
        ...

    def peek(self, id: str) -> MemoryItem | None:
        """The visible item ``id`` without counting an access."""
        ...

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


class BackendBase:
    """What every backend shares: its eviction configuration and its clock."""

    _eviction: EvictionConfig
    _clock: Clock

    @property
    def eviction(self) -> EvictionConfig:
        return self._eviction

    def now(self) -> float:
        """The clock's reading: Unix seconds, the time of every timestamp."""
        return self._clock()


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


def delete_prefix(store: MemoryBackend, prefix: str) -> int:
    """Delete every item whose id starts with ``prefix``, in one batch; how many."""
    with store.batch():
        ids = store.keys(prefix)
        for id in ids:
            store.delete(id)
    return len(ids)
