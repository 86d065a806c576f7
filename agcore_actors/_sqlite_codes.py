"""What kind of failure a ``sqlite3`` error is, by its primary result code.

Shared by the memory store and the session store, which map each kind onto errors of
their own (see their ``_schema.classify``).
"""

from __future__ import annotations

import sqlite3
from typing import Literal

__all__ = ["SqliteFailure", "sqlite_failure"]

#: ``busy``: the file stayed locked past the busy timeout (retrying may succeed);
#: ``unavailable``: full, read-only, I/O error, cannot open, no permission (the file
#: may serve again later); ``corrupt``: corrupt or not a database; ``other``: anything
#: else (a misuse, a constraint, an unknown code).
SqliteFailure = Literal["busy", "unavailable", "corrupt", "other"]

_KINDS: dict[int, SqliteFailure] = {
    sqlite3.SQLITE_BUSY: "busy",
    sqlite3.SQLITE_LOCKED: "busy",
    sqlite3.SQLITE_FULL: "unavailable",
    sqlite3.SQLITE_READONLY: "unavailable",
    sqlite3.SQLITE_IOERR: "unavailable",
    sqlite3.SQLITE_CANTOPEN: "unavailable",
    sqlite3.SQLITE_PERM: "unavailable",
    sqlite3.SQLITE_CORRUPT: "corrupt",
    sqlite3.SQLITE_NOTADB: "corrupt",
}


def sqlite_failure(exc: sqlite3.Error) -> tuple[SqliteFailure, str]:
    """The kind of ``exc`` and a message naming SQLite's error (``"SQLITE_FULL: ..."``)."""
    code = getattr(exc, "sqlite_errorcode", None)
    kind = "other" if code is None else _KINDS.get(code & 0xFF, "other")
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    return kind, f"{name}: {exc}"
