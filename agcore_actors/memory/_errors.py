"""The memory layer's leaves of the error tree.

::

    MemoryStoreError              the root (an AgcoreError)
    ├── NotFound                  LookupError; recoverable
    ├── InvalidInput              ValueError: refused before anything changed
    ├── SerializationError        ValueError: a stored row or imported line does not decode
    ├── RetrievalError            recoverable: the query cannot run
    └── StorageError              the file failed: the actor crashes and is reopened
        ├── StorageBusy           retryable: the file stayed locked past the busy timeout
        ├── StorageUnavailable    full, read-only, I/O error: the asker's; the actor stays up
        ├── StorageCorrupt        the file is damaged or not a store
        └── StoreInUse            another store writes to the file: refused at open

What the :class:`~agcore_actors.memory.MemoryStore` actor does with each: the
asker gets every error. :class:`StorageBusy` and :class:`StorageUnavailable` stop
there: nothing was written, the actor stays up (degraded, for the latter, until
a write succeeds). Any other :class:`StorageError` also crashes the actor, so its
supervisor reopens the file. ``is_recoverable()`` is True for :class:`NotFound` and
:class:`RetrievalError`: in a turn, the model is shown them and may go on.
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError

__all__ = [
    "InvalidInput",
    "MemoryStoreError",
    "NotFound",
    "RetrievalError",
    "SerializationError",
    "StorageError",
]


class MemoryStoreError(AgcoreError):
    """Base of every error the memory layer raises on purpose."""

    kind: ClassVar[str] = "memory"


class NotFound(MemoryStoreError, LookupError):
    """The item (or page) does not exist, or has expired; ``key`` names it."""

    kind: ClassVar[str] = "memory_not_found"

    def __init__(self, key: str) -> None:
        super().__init__(f"item not found: {key}")
        self.key = key

    def is_recoverable(self) -> bool:
        return True


class InvalidInput(MemoryStoreError, ValueError):
    """The caller passed something the store refuses; nothing was changed."""

    kind: ClassVar[str] = "memory_invalid_input"


class SerializationError(MemoryStoreError, ValueError):
    """A stored row or an imported line could not be decoded; nothing was changed."""

    kind: ClassVar[str] = "memory_serialization"


class RetrievalError(MemoryStoreError):
    """Retrieval could not run (for example a query the text index rejects)."""

    kind: ClassVar[str] = "memory_retrieval"

    def is_recoverable(self) -> bool:
        return True


class StorageError(MemoryStoreError):
    """The storage backend failed (I/O error, corrupt or newer database file)."""

    kind: ClassVar[str] = "memory_storage"


class StorageBusy(StorageError):
    """The file stayed locked by another connection past the busy timeout.

    Nothing was written; sending the same request again may succeed.
    """

    kind: ClassVar[str] = "memory_storage_busy"

    def is_retryable(self) -> bool:
        return True


class StorageUnavailable(StorageError):
    """The file cannot be written or read (disk full, read-only, an I/O error).

    Nothing was written. The actor stays up and reports itself degraded until a
    write succeeds again.
    """

    kind: ClassVar[str] = "memory_storage_unavailable"


class StorageCorrupt(StorageError):
    """The file is damaged or is not a store (a failed integrity check included)."""

    kind: ClassVar[str] = "memory_storage_corrupt"


class StoreInUse(StorageError):
    """Another store (in this process or another) has the file open for writing.

    Raised when opening: two writers on one file would break the capacity bounds
    and the LRU order, which each writer keeps for itself.
    """

    kind: ClassVar[str] = "memory_store_in_use"
