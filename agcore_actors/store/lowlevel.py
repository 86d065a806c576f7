"""Mechanics under the SessionStore actor: the storage backends and the migration.

Use these to inspect a database file (``SqliteSessionBackend(path).integrity_check()``)
or to write a backend of your own; an application talks to the actor.
"""

from .._exports import publish
from ._backend import Backend, Operation
from ._memory import InMemorySessionBackend
from ._migrate import (
    MIGRATED_KEY,
    MigrationReport,
    memory_transcripts,
    migrate_memory_transcripts,
)
from ._schema import SCHEMA_VERSION
from ._sqlite import SqliteSessionBackend

# ``PostgresSessionBackend`` is in ``agcore_actors.store._postgres`` (it needs psycopg).

__all__ = [
    "MIGRATED_KEY",
    "SCHEMA_VERSION",
    "Backend",
    "InMemorySessionBackend",
    "MigrationReport",
    "Operation",
    "SqliteSessionBackend",
    "memory_transcripts",
    "migrate_memory_transcripts",
]

publish(__name__, __all__)
