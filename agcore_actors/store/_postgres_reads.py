"""The PostgreSQL backend's reads of the log, its blobs, facts, summaries and pages.

Each reads through :meth:`_flush`: the batch's buffered writes go to the server first,
so a read inside a write batch sees what the batch's earlier requests wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm import Message
from ._backend import decode_messages
from ._blobs import BlobShelf
from ._postgres_schema import check_values
from ._session_rows import COLUMNS, record_of
from .messages import LogEntry, SessionRecord, SessionStatus


class PostgresReads:
    """Mixed into :class:`._postgres.PostgresSessionBackend` (which has ``_flush``)."""

    blobs: BlobShelf

    if TYPE_CHECKING:  # the backend's (declared for the checker, not defined here)

        def _flush(self) -> Any: ...

    def _blob(self, digest: str) -> bytes | None:
        row = self._flush().execute("SELECT data FROM blobs WHERE hash = %s", (digest,))
        found = row.fetchone()
        return None if found is None else bytes(found[0])

    def summary(self, session: str) -> list[Message]:
        row = self._flush().execute("SELECT summary FROM sessions WHERE id = %s", (session,))
        found = row.fetchone()
        return [] if found is None or found[0] is None else decode_messages(found[0])

    def facts(self, session: str) -> dict[str, str]:
        rows = self._flush().execute(
            "SELECT key, value FROM facts WHERE session = %s ORDER BY key",
            (session,),
        )
        return dict(rows.fetchall())

    def has_turn(self, session: str, turn: str) -> bool:
        check_values([session, turn])
        row = self._flush().execute(
            "SELECT 1 FROM messages WHERE session = %s AND turn = %s LIMIT 1", (session, turn)
        )
        return row.fetchone() is not None

    def entries(self, session: str, start: int, stop: int) -> list[LogEntry]:
        rows = self._flush().execute(
            "SELECT idx, turn, created_at, body FROM messages "
            "WHERE session = %s AND idx >= %s AND idx < %s ORDER BY idx",
            (session, start, stop),
        )
        return [
            LogEntry(index=i, turn=t, created_at=at, message=self.blobs.decode(body))
            for i, t, at, body in rows.fetchall()
        ]

    def messages(self, session: str, start: int, stop: int) -> list[Message]:
        rows = self._flush().execute(
            "SELECT body FROM messages WHERE session = %s AND idx >= %s AND idx < %s ORDER BY idx",
            (session, start, stop),
        )
        return [self.blobs.decode(body) for (body,) in rows.fetchall()]

    def is_tool(self, session: str, index: int) -> bool:
        row = self._flush().execute(
            "SELECT role FROM messages WHERE session = %s AND idx = %s", (session, index)
        )
        found = row.fetchone()
        return found is not None and found[0] == "tool"

    def group_start(self, session: str, index: int) -> int:
        row = self._flush().execute(
            "SELECT idx FROM messages WHERE session = %s AND idx <= %s AND role <> 'tool' "
            "ORDER BY idx DESC LIMIT 1",
            (session, index),
        )
        found = row.fetchone()
        return 0 if found is None else int(found[0])

    def page(
        self,
        idle_before: float | None,
        status: SessionStatus | None,
        after: tuple[float, str] | None,
        limit: int,
    ) -> list[SessionRecord]:
        where: list[str] = []
        args: list[Any] = []
        if status is not None:
            where.append("status = %s")
            args.append(status)
        if idle_before is not None:
            where.append("updated_at < %s")
            args.append(idle_before)
        if after is not None:
            check_values([after[1]])
            where.append("(updated_at, id) > (%s, %s)")
            args.extend(after)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        rows = self._flush().execute(
            f"SELECT {COLUMNS} FROM sessions {clause}ORDER BY updated_at, id LIMIT %s",
            (*args, limit),
        )
        return [record_of(row) for row in rows.fetchall()]
