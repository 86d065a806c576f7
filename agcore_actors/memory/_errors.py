"""Errors of the memory layer.

The seed's ``MemoryError`` enum becomes a small exception hierarchy (the name
``MemoryError`` is a Python builtin, so the base is :class:`MemoryStoreError`).
``recoverable`` keeps the seed's rule: only ``NotFound`` and ``RetrievalError``
are recoverable.
"""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Base of every error the memory layer raises on purpose."""

    recoverable: bool = False


class NotFound(MemoryStoreError):
    """The item (or page) does not exist, or has expired."""

    recoverable = True

    def __init__(self, key: str) -> None:
        super().__init__(f"item not found: {key}")
        self.key = key


class StorageError(MemoryStoreError):
    """The storage backend failed (I/O error, corrupt or newer database file)."""


class SerializationError(MemoryStoreError):
    """A stored row or an imported line could not be decoded."""


class InvalidInput(MemoryStoreError):
    """The caller passed something the store refuses; nothing was changed."""


class RetrievalError(MemoryStoreError):
    """Retrieval could not run (for example a query the text index rejects)."""

    recoverable = True
