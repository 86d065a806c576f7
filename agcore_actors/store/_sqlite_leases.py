"""The SQLite backend's leases and hosts (see :class:`._backend.Backend`).

One SQLite file is one machine's: its clock is the actor's (``now``), and leases are
renewed one row at a time in the batch's transaction (no network round trips to save).
Lease and host rows are written at once, not buffered: no other operation reads them
through the write buffer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ._backend import release_each, renew_each
from .messages import HostRecord, Lease, LeaseRef


class SqliteLeases:
    """Mixed into :class:`._sqlite.SqliteSessionBackend`, which sets ``_conn``."""

    _conn: sqlite3.Connection

    def clock(self, now: float) -> float:
        return now

    def lease(self, session: str, *, lock: bool) -> Lease | None:
        # A write transaction (BEGIN IMMEDIATE) already holds the file's write lock.
        row = self._conn.execute(
            "SELECT host, token, expires_at, released FROM leases WHERE session = ?", (session,)
        ).fetchone()
        if row is None:
            return None
        return Lease(
            session=session, host=row[0], token=row[1], expires_at=row[2], released=bool(row[3])
        )

    def put_lease(self, lease: Lease) -> None:
        self._conn.execute(
            "INSERT INTO leases (session, host, token, expires_at, released) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session) DO UPDATE SET host = excluded.host, "
            "token = excluded.token, expires_at = excluded.expires_at, "
            "released = excluded.released",
            (lease.session, lease.host, lease.token, lease.expires_at, int(lease.released)),
        )

    def renew_leases(
        self, host: str, leases: Sequence[LeaseRef], now: float, until: float
    ) -> tuple[list[str], bool]:
        return renew_each(self, host, leases, now, until)  # type: ignore[arg-type]

    def release_leases(self, host: str, leases: Sequence[LeaseRef], now: float) -> list[str]:
        return release_each(self, host, leases, now)  # type: ignore[arg-type]

    def host(self, host: str) -> HostRecord | None:
        row = self._conn.execute(
            "SELECT address, registered_at, expires_at FROM hosts WHERE host = ?", (host,)
        ).fetchone()
        if row is None:
            return None
        return HostRecord(host=host, address=row[0], registered_at=row[1], expires_at=row[2])

    def put_host(self, record: HostRecord) -> None:
        self._conn.execute(
            "INSERT INTO hosts (host, address, registered_at, expires_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (host) DO UPDATE SET address = excluded.address, "
            "registered_at = excluded.registered_at, expires_at = excluded.expires_at",
            (record.host, record.address, record.registered_at, record.expires_at),
        )

    def hosts(self) -> list[HostRecord]:
        rows = self._conn.execute(
            "SELECT host, address, registered_at, expires_at FROM hosts ORDER BY host"
        )
        return [HostRecord(host=h, address=a, registered_at=r, expires_at=e) for h, a, r, e in rows]

    def delete_host(self, host: str) -> bool:
        gone = self._conn.execute("DELETE FROM hosts WHERE host = ? RETURNING host", (host,))
        return gone.fetchone() is not None
