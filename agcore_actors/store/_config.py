"""What a SessionStore opens (its backend) and how it batches."""

from __future__ import annotations

from typing import Literal

import attrs

from .._validators import at_least_one, non_empty, positive
from ._schema import DEFAULT_CHECKPOINT_PAGES, DEFAULT_PAGE_SIZE, check_page_size

__all__ = [
    "InMemorySessions",
    "PostgresSessions",
    "SessionBackendConfig",
    "SessionStoreConfig",
    "SqliteSessions",
]


def _synchronous(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in ("FULL", "NORMAL"):
        raise ValueError(f"{attribute.name} must be 'FULL' or 'NORMAL', not {value!r}")


def _page_size(_: object, __: attrs.Attribute[int], value: int) -> None:
    check_page_size(value)  # InvalidRequest, a ValueError


@attrs.frozen
class InMemorySessions:
    """Sessions in memory: kept across restarts of the actor made from one spec, lost
    with the process. For tests and bots whose sessions need not outlive it."""


@attrs.frozen
class SqliteSessions:
    """Sessions in a SQLite file (WAL). The file may be the memory store's own."""

    #: The database file; created if missing.
    path: str = attrs.field(validator=non_empty)
    #: "FULL": a reply means durable on disk; "NORMAL": survives a killed process only.
    synchronous: Literal["FULL", "NORMAL"] = attrs.field(default="FULL", validator=_synchronous)
    #: Seconds to wait for another connection's write transaction on the same file.
    busy_timeout: float = attrs.field(default=10.0, validator=positive)
    #: The connection's page cache, in MiB.
    cache_mib: int = attrs.field(default=32, validator=at_least_one)
    #: WAL pages written before a commit also checkpoints them into the database (SQLite's
    #: default is 1,000). More pages: fewer checkpoints, and a page that commits keep
    #: changing (an active session's leaf, an index's tail) is copied once per checkpoint
    #: however often it changed; the WAL file grows to about this many pages (40 MiB at
    #: the default page size) and a reader's page lookup in it costs a little more.
    checkpoint_pages: int = attrs.field(default=DEFAULT_CHECKPOINT_PAGES, validator=at_least_one)
    #: The page size of a file the store creates (a power of two, 512 to 65,536); an
    #: existing file keeps its own. 2,048 rather than SQLite's 4,096: a commit dirties a
    #: few pages at random places and each is written whole, to the WAL and again at a
    #: checkpoint, so smaller pages mean fewer bytes per commit.
    page_size: int = attrs.field(default=DEFAULT_PAGE_SIZE, validator=_page_size)
    #: A memory store file whose transcripts (``conv:`` items) and session facts are
    #: copied into the session tables on the first open; None: no migration.
    migrate_from: str | None = None


def _postgres_url(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.startswith(("postgresql://", "postgres://")):
        raise ValueError(f"{attribute.name} must be a postgresql:// URL")


def _lease_clock(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in ("database", "local"):
        raise ValueError(f"{attribute.name} must be 'database' or 'local', not {value!r}")


@attrs.frozen
class PostgresSessions:
    """Sessions in a PostgreSQL database, which several hosts may share (psycopg 3, the
    ``postgres`` extra). The tables are created or migrated on open; give the store a
    database (or a ``search_path`` schema) of its own."""

    #: ``postgresql://user:password@host:port/database?options``; the password is never
    #: logged nor put in an error (``repr`` hides it too).
    url: str = attrs.field(validator=_postgres_url, repr=False)
    #: Seconds to wait for a connection (at open, and when reconnecting after a loss).
    connect_timeout: float = attrs.field(default=10.0, validator=positive)
    #: Leases and heartbeats on the server's clock ("database", shared by every host) or
    #: on the actor's ("local": one host only, or tests on virtual time).
    lease_clock: Literal["database", "local"] = attrs.field(
        default="database", validator=_lease_clock
    )
    #: Times a batch is run again after a deadlock, serialization failure or a
    #: concurrent insert of the same row, before its requests get ``StoreBusy``.
    retries: int = attrs.field(default=8, validator=at_least_one)
    #: Seconds the server lets a transaction of this store sit idle before it ends it
    #: (``idle_in_transaction_session_timeout``): a host stopped, stalled or cut off in
    #: the middle of a batch then holds its row locks no longer than this, and other
    #: hosts can take its sessions over once its leases expire. ``serve`` sets it to
    #: the cluster's ``lease_ttl``: a transaction idle that long belongs to a host
    #: that has stopped serving by its own clock anyway.
    stall_timeout: float = attrs.field(default=10.0, validator=positive)


SessionBackendConfig = InMemorySessions | SqliteSessions | PostgresSessions


@attrs.frozen
class SessionStoreConfig:
    """How the SessionStore actor takes requests and commits them."""

    #: Most requests written in one transaction (one fsync); 1: one transaction each.
    max_batch: int = attrs.field(default=256, validator=at_least_one)
    #: The mailbox's capacity: senders wait beyond it (back-pressure).
    mailbox_size: int = attrs.field(default=4096, validator=at_least_one)
