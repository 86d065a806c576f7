"""The MemoryStore actor's configuration."""

from __future__ import annotations

from typing import Literal

import attrs

from .._validators import positive
from ._eviction import EvictionConfig
from ._retriever import RetrieverConfig


@attrs.frozen(kw_only=True)
class MemoryStoreConfig:
    """What a MemoryStore actor opens and how it behaves."""

    #: The SQLite file (created if missing); None: an in-memory store.
    path: str | None = None
    #: The eviction policy and its sweeps.
    eviction: EvictionConfig = attrs.field(factory=EvictionConfig)
    #: Retrieval defaults (a ``Retrieve`` may override three of them).
    retriever: RetrieverConfig = attrs.field(factory=RetrieverConfig)
    #: SQLite's durability level (see ``SqliteBackend``).
    synchronous: Literal["FULL", "NORMAL"] = attrs.field(
        default="FULL", validator=attrs.validators.in_(("FULL", "NORMAL"))
    )
    #: Seconds a write waits for a lock another connection holds (then StorageBusy).
    busy_timeout: float = attrs.field(default=10.0, validator=positive)
    #: Check the whole file when the actor opens it (see ``SqliteBackend``).
    check_integrity: bool = False
