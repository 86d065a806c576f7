"""The PostgreSQL backend's leases and hosts (see :class:`._backend.Backend`).

The clock is the server's (``clock_timestamp()``), read once per transaction: every
host sharing the database compares lease times against the same clock. A lease row is
read ``FOR UPDATE`` by a grant that can be granted (a grant reads the lease without a
lock first and is refused on that read when another host holds it live, so a refused
grant never queues for the row, where a renewal of the live lease would queue behind
it) and at least ``FOR KEY SHARE`` by a fenced write (the batch's prefetch, or ``FOR
UPDATE`` here), so a grant and a fenced write of one session are serialised, while a
renewal (an ``UPDATE`` of the expiry alone, which takes no lock
that conflicts with ``FOR KEY SHARE``) never waits for the host's own writes. A
session's first lease is a plain ``INSERT``: two hosts granting it at once collide on
the primary key, and the loser's batch runs again and finds the winner's lease.
``RenewLeases`` is one statement for all of a host's leases and its heartbeat;
``ReleaseLeases`` one statement too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from ._leases import held_elsewhere
from ._postgres_schema import check_values
from .messages import HostRecord, Lease, LeaseRef

_LEASE_COLUMNS = "session, host, token, expires_at, released"
_RENEW = """
WITH beat AS (
    UPDATE hosts SET expires_at = %(until)s WHERE host = %(host)s RETURNING host
), renewed AS (
    UPDATE leases SET expires_at = %(until)s
    FROM unnest(%(sessions)s::text[], %(tokens)s::bigint[]) AS r(session, token)
    WHERE leases.session = r.session AND leases.token = r.token
        AND leases.host = %(host)s AND NOT leases.released AND leases.expires_at > %(now)s
    RETURNING leases.session
)
SELECT session FROM renewed UNION ALL SELECT NULL FROM beat
"""
_RELEASE = """
UPDATE leases SET expires_at = %(now)s, released = true
FROM unnest(%(sessions)s::text[], %(tokens)s::bigint[]) AS r(session, token)
WHERE leases.session = r.session AND leases.token = r.token
    AND leases.host = %(host)s AND NOT leases.released
RETURNING leases.session
"""


def _lease(row: Sequence[Any]) -> Lease:
    return Lease(
        session=row[0], host=row[1], token=row[2], expires_at=row[3], released=bool(row[4])
    )


class PostgresLeases:
    """Mixed into :class:`._postgres.PostgresSessionBackend` (which sets these)."""

    LEASES_FOR_UPDATE = (
        f"SELECT {_LEASE_COLUMNS} FROM leases WHERE session = ANY(%s) ORDER BY session FOR UPDATE"
    )
    LEASES = f"SELECT {_LEASE_COLUMNS} FROM leases WHERE session = ANY(%s)"
    LEASES_FOR_KEY_SHARE = (
        f"SELECT {_LEASE_COLUMNS} FROM leases WHERE session = ANY(%s) "
        "ORDER BY session FOR KEY SHARE"
    )
    _conn: Any
    _reader: bool
    lease_clock: Literal["database", "local"]
    #: Within one transaction: the leases read (None: no row), and the server's clock.
    _leases: dict[str, Lease | None]
    _now: float | None
    #: Within one transaction: the sessions whose lease row it locked ``FOR KEY SHARE``.
    _key_shared: frozenset[str] = frozenset()
    #: Within one transaction: the sessions whose lease row it locked (in either mode).
    _locked: frozenset[str] = frozenset()

    def _reset_leases(self, *, locks: bool = True) -> None:
        """Forget the leases read (and, with ``locks``, the lock modes: a new transaction).
        After a rollback to a savepoint the locks taken before it are still held."""
        self._leases = {}
        self._now = None
        if locks:
            self._key_shared = frozenset()
            self._locked = frozenset()

    def _known_leases(self, sessions: list[str], rows: list[Any]) -> None:
        self._leases.update(dict.fromkeys(sessions))
        for row in rows:
            self._leases[row[0]] = _lease(row)

    def _lock_grantable(self, grants: dict[str, set[str]]) -> None:
        """After an unlocked read of the leases of a batch's grants (``grants``: session
        to the hosts asking): lock ``FOR UPDATE``, in one statement in session order, the
        leases some grant may get (not held live by another host by the server's clock;
        with the local clock, whatever the expiry), and read them again. The others are
        left unlocked, to be refused on the read already made."""
        t = self._now
        grantable = sorted(
            s
            for s, hosts in grants.items()
            if (lease := self._leases.get(s)) is not None
            and any(not held_elsewhere(lease, h, math.inf if t is None else t) for h in hosts)
        )
        if grantable:
            rows = self._conn.execute(self.LEASES_FOR_UPDATE, (grantable,)).fetchall()
            self._known_leases(grantable, rows)
            self._locked |= frozenset(grantable)

    def clock(self, now: float) -> float:
        if self.lease_clock == "local":
            return now
        if self._now is None:
            row = self._conn.execute("SELECT extract(epoch from clock_timestamp())::float8")
            self._now = float(row.fetchone()[0])
        return self._now

    def lease(self, session: str, *, lock: bool) -> Lease | None:
        lock = lock and not self._reader
        if session in self._leases and (not lock or session in self._locked):
            return self._leases[session]
        check_values([session])
        # Read again in the mode this transaction already holds: upgrading a key share to
        # an update lock deadlocks with another host's fenced write holding one too.
        mode = " FOR KEY SHARE" if session in self._key_shared else " FOR UPDATE"
        lock_clause = mode if lock else ""
        row = self._conn.execute(
            f"SELECT {_LEASE_COLUMNS} FROM leases WHERE session = %s{lock_clause}", (session,)
        ).fetchone()
        found = None if row is None else _lease(row)
        self._leases[session] = found
        if lock:
            self._locked |= {session}
        return found

    def put_lease(self, lease: Lease) -> None:
        values = (lease.host, lease.token, lease.expires_at, lease.released, lease.session)
        check_values(values)
        if self._leases.get(lease.session) is None:
            self._conn.execute(
                "INSERT INTO leases (host, token, expires_at, released, session) "
                "VALUES (%s, %s, %s, %s, %s)",
                values,
            )
        else:
            self._conn.execute(
                "UPDATE leases SET host = %s, token = %s, expires_at = %s, released = %s "
                "WHERE session = %s",
                values,
            )
        self._leases[lease.session] = lease

    def renew_leases(
        self, host: str, leases: Sequence[LeaseRef], now: float, until: float
    ) -> tuple[list[str], bool]:
        check_values([host, *(s for s, _ in leases), *(t for _, t in leases)])
        rows = self._conn.execute(
            _RENEW,
            {
                "host": host,
                "now": now,
                "until": until,
                "sessions": [s for s, _ in leases],
                "tokens": [t for _, t in leases],
            },
        ).fetchall()
        self._leases.clear()
        renewed = [r[0] for r in rows if r[0] is not None]
        return renewed, len(renewed) < len(rows)

    def release_leases(self, host: str, leases: Sequence[LeaseRef], now: float) -> list[str]:
        check_values([host, *(s for s, _ in leases), *(t for _, t in leases)])
        rows = self._conn.execute(
            _RELEASE,
            {
                "host": host,
                "now": now,
                "sessions": [s for s, _ in leases],
                "tokens": [t for _, t in leases],
            },
        ).fetchall()
        self._leases.clear()
        return [r[0] for r in rows]

    def host(self, host: str) -> HostRecord | None:
        check_values([host])
        row = self._conn.execute(
            "SELECT address, registered_at, expires_at FROM hosts WHERE host = %s", (host,)
        ).fetchone()
        if row is None:
            return None
        return HostRecord(host=host, address=row[0], registered_at=row[1], expires_at=row[2])

    def put_host(self, record: HostRecord) -> None:
        values = (record.host, record.address, record.registered_at, record.expires_at)
        check_values(values)
        self._conn.execute(
            "INSERT INTO hosts (host, address, registered_at, expires_at) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (host) DO UPDATE SET "
            "address = excluded.address, registered_at = excluded.registered_at, "
            "expires_at = excluded.expires_at",
            values,
        )

    def hosts(self) -> list[HostRecord]:
        rows = self._conn.execute(
            "SELECT host, address, registered_at, expires_at FROM hosts ORDER BY host"
        ).fetchall()
        return [HostRecord(host=h, address=a, registered_at=r, expires_at=e) for h, a, r, e in rows]

    def delete_host(self, host: str) -> bool:
        check_values([host])
        gone = self._conn.execute("DELETE FROM hosts WHERE host = %s RETURNING host", (host,))
        return gone.fetchone() is not None
