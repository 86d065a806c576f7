"""What the session store and the memory store do alike on PostgreSQL (imports nothing of
ours but :mod:`._postgres_url`): load psycopg, sort its errors, connect, and run the
migrations of a schema.

Each store keeps its own tables, advisory lock, version row and error classes; these
helpers take them as arguments. Connecting and migrating are blocking psycopg calls (the
stores run them in a worker thread); a connection that fails to set up is closed before
the error leaves, whatever the error.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

__all__ = ["BUSY", "ErrorKind", "apply_migrations", "connect", "error_kind", "import_psycopg"]

#: Serialization failure, deadlock, lock not available: try again later.
BUSY = frozenset({"40001", "40P01", "55P03"})
#: The connection (08), insufficient resources (53), operator intervention (57: shutdown,
#: cancelled), system errors (58); with read-only transactions (25006), unavailable.
_UNAVAILABLE_CLASSES = frozenset({"08", "53", "57", "58"})

ErrorKind = Literal["busy", "unavailable", "data", "other"]


def import_psycopg(needed_by: str) -> Any:
    """The psycopg module, or one clear line naming ``needed_by`` and the extra to install."""
    try:
        import psycopg
    except ImportError:
        raise ModuleNotFoundError(
            f"{needed_by} needs psycopg: pip install 'agcore-actors[postgres]'",
            name="psycopg",
        ) from None
    return psycopg


def error_kind(exc: BaseException, psycopg: Any, *, busy: Collection[str] = BUSY) -> ErrorKind:
    """What one of psycopg's errors means: ``busy`` (its SQLSTATE is in ``busy``: the same
    work may succeed later), ``unavailable`` (the connection is lost or refused, or the
    server out of resources, shutting down or read-only), ``data`` (a value a column
    cannot hold, SQLSTATE class 22), ``other``."""
    state = getattr(exc, "sqlstate", None) or ""
    if state in busy:
        return "busy"
    if (
        (isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and not state)
        or state[:2] in _UNAVAILABLE_CLASSES
        or state == "25006"
    ):
        return "unavailable"
    if state[:2] == "22":
        return "data"
    return "other"


def apply_migrations(
    conn: Any,
    migrations: Sequence[str],
    found: int,
    *,
    tables: str,
    too_new: Callable[[str], Exception],
) -> bool:
    """Run ``migrations[found:]`` on ``conn``, statement by statement (migration ``i``
    takes the schema from version i to i + 1); whether any ran. The caller holds the
    transaction and the advisory lock, and records the new version when this is true.
    A schema newer than ``len(migrations)`` raises ``too_new(message)``, naming
    ``tables``, with nothing run."""
    latest = len(migrations)
    if found > latest:
        raise too_new(
            f"the {tables} tables have schema version {found}, newer than this code's {latest}"
        )
    for version in range(found, latest):
        for statement in migrations[version].split(";"):
            if statement.strip():
                conn.execute(statement)
    return found != latest


def connect(
    url: str,
    *,
    psycopg: Any,
    connect_timeout: float,
    autocommit: bool,
    setup: Callable[[Any], object],
    classify: Callable[[BaseException, str], Exception],
) -> Any:
    """A psycopg connection to ``url`` on which ``setup`` has run; a psycopg error of
    either step is raised as ``classify(error, url)``. If ``setup`` raises anything, the
    connection is closed first."""
    try:
        conn = psycopg.connect(
            url, autocommit=autocommit, connect_timeout=max(1, round(connect_timeout))
        )
    except psycopg.Error as exc:
        raise classify(exc, url) from None
    try:
        setup(conn)
    except psycopg.Error as exc:
        conn.close()
        raise classify(exc, url) from None
    except BaseException:
        conn.close()
        raise
    return conn
