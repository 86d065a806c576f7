"""How a SessionStore's backend config opens its backends: called at each start of the
actor, in the worker thread the backend then runs in (a file or a connection is opened
there, never on the event loop).

SQLite opens two connections on one file, the writer (which runs the schema migrations
and, once, the transcript migration of ``migrate_from``) and a reader; PostgreSQL opens
four, the writer (which migrates the schema), the reader, the lease renewals and the
lease grants (see :class:`~agcore_actors.store.SessionStore`). A failed transcript
migration closes the writer's file before it raises.
"""

from __future__ import annotations

from ._backend import Backend
from ._config import PostgresSessions, SqliteSessions
from ._migrate import migrate_memory_transcripts
from ._sqlite import SqliteSessionBackend

__all__ = ["open_postgres", "open_sqlite"]


def open_postgres(config: PostgresSessions, *, reader: bool, migrate: bool = False) -> Backend:
    from ._postgres import PostgresSessionBackend  # psycopg only when used

    return PostgresSessionBackend(
        config.url,
        connect_timeout=config.connect_timeout,
        lease_clock=config.lease_clock,
        retries=config.retries,
        migrate=migrate,
        reader=reader,
        stall_timeout=config.stall_timeout,
    )


def open_sqlite(config: SqliteSessions, *, migrate: bool) -> Backend:
    opened = SqliteSessionBackend(
        config.path,
        synchronous=config.synchronous,
        busy_timeout=config.busy_timeout,
        cache_mib=config.cache_mib,
        checkpoint_pages=config.checkpoint_pages,
        page_size=config.page_size,
        # The reader's cache would be emptied by nearly every write of the writer.
        record_cache=16_384 if migrate else 0,
    )
    if migrate and config.migrate_from is not None:
        try:
            migrate_memory_transcripts(opened, config.migrate_from)
        except BaseException:
            opened.close()
            raise
    return opened
