"""The MemoryStore actor's configuration."""

from __future__ import annotations

from typing import Literal

import attrs

from .._validators import positive
from ._embeddings import Embedder
from ._eviction import EvictionConfig
from ._retriever import RetrieverConfig


def _postgres_url(_: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (
        not isinstance(value, str) or not value.startswith(("postgresql://", "postgres://"))
    ):
        raise ValueError(f"{attribute.name} must be a postgresql:// URL")


@attrs.frozen(kw_only=True)
class MemoryStoreConfig:
    """What a MemoryStore actor opens and how it behaves.

    The backend: ``url`` (PostgreSQL, shared by every host that names it), else
    ``path`` (a SQLite file), else memory. Giving both is refused.
    """

    #: The SQLite file (created if missing); None: PostgreSQL (``url``) or in memory.
    path: str | None = None
    #: ``postgresql://user:password@host:port/database``: the store in PostgreSQL
    #: (the ``postgres`` extra; tables created or migrated on open). Never shown in
    #: a repr or an error with its password.
    url: str | None = attrs.field(default=None, validator=_postgres_url, repr=False)
    #: The eviction policy and its sweeps.
    eviction: EvictionConfig = attrs.field(factory=EvictionConfig)
    #: Retrieval defaults (a ``Retrieve`` may override three of them).
    retriever: RetrieverConfig = attrs.field(factory=RetrieverConfig)
    #: The model of ``RetrievalMode.BM25_EMBEDDINGS`` (``WordLlamaEmbedder()``, the
    #: ``embeddings`` extra); None: that mode is refused. Shared by every incarnation
    #: of the actor (built once, by the caller).
    embedder: Embedder | None = None
    #: SQLite's durability level (see ``SqliteBackend``).
    synchronous: Literal["FULL", "NORMAL"] = attrs.field(
        default="FULL", validator=attrs.validators.in_(("FULL", "NORMAL"))
    )
    #: Seconds a write waits for a lock another connection holds (then StorageBusy).
    busy_timeout: float = attrs.field(default=10.0, validator=positive)
    #: Check the whole file when the actor opens it (see ``SqliteBackend``).
    check_integrity: bool = False

    def __attrs_post_init__(self) -> None:
        if self.url is not None and self.path is not None:
            raise ValueError("give a memory store a path (SQLite) or a url (PostgreSQL), not both")
