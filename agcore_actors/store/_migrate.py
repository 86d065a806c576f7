"""One-off migration: transcripts kept as memory items become sessions.

Before the session store, a transcript was a run of memory items
``conv:{session}:{index:010d}`` (the message as JSON) and a session's facts were items
``_session_{session}:{key}`` (the value), with ``%`` and ``:`` in the session id
escaped as ``%25`` and ``%3A``. On the first open of a store configured with
``migrate_from``, every such session is copied into the session tables, in one
transaction that also records that the migration is done (so it runs once, and a crash
during it leaves nothing half-copied):

- messages in index order, each as the chat message its JSON describes (a missing
  text ``content`` becomes ""); a row that is not a chat message is dropped and
  counted;
- the transcript is then made valid (:func:`~agcore_actors.store._rules.repaired`): a
  tool result whose call is gone (the old sliding window and store-wide eviction
  removed messages one by one) is dropped, and a call left without a result gets a
  synthetic ``Error: tool call interrupted``;
- the record: agent "", status idle, ``turns`` = the number of user messages, created
  and updated at the first and last item's ``created_at``, version 1; turn id
  ``"migrated"`` on every message;
- a session that already exists in the store is left alone.

The memory file is only read (it may be the store's own file); its items stay where
they are, for the memory store to keep or evict as before.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ..llm import Message, ToolMessage, UserMessage
from . import _ops
from ._rules import repaired
from ._schema import get_meta, set_meta, storage_errors
from ._sqlite import SqliteSessionBackend
from .messages import LogEntry, RestoreSession, SessionRecord, SessionSnapshot

__all__ = ["MIGRATED_KEY", "memory_transcripts", "migrate_memory_transcripts"]

#: The ``store_meta`` key recording that (and what) the migration copied.
MIGRATED_KEY = "memory_transcripts_migrated"
_CONV, _FACTS = "conv:", "_session_"
_TEXT_ROLES = ("system", "developer", "user", "tool")
_json = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class MigrationReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a migration copied (kept as JSON under :data:`MIGRATED_KEY`)."""

    source: str
    sessions: int = 0
    messages: int = 0
    #: Rows that were not chat messages, and tool results whose call was gone.
    dropped: int = 0
    #: Sessions the store already had.
    skipped_existing: int = 0


def _unescape(segment: str) -> str:
    return segment.replace("%3A", ":").replace("%25", "%")


def _message(content: str) -> Message | None:
    try:
        raw = _json.decode(content)
        if isinstance(raw, dict) and raw.get("role") in _TEXT_ROLES and raw.get("content") is None:
            raw["content"] = ""
        message: Message = msgspec.convert(raw, Message)
        return message
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _rows(conn: sqlite3.Connection, prefix: str) -> Iterator[tuple[str, str, float]]:
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    yield from conn.execute(
        "SELECT id, content, created_at FROM items WHERE id >= ? AND id < ? ORDER BY id",
        (prefix, upper),
    )


class _Facts:
    __slots__ = ("first", "last", "values")

    def __init__(self, at: float) -> None:
        self.values: dict[str, str] = {}
        self.first = self.last = at


def _facts(conn: sqlite3.Connection) -> dict[str, _Facts]:
    out: dict[str, _Facts] = {}
    for id, content, at in _rows(conn, _FACTS):
        session, sep, key = id[len(_FACTS) :].partition(":")
        if sep and key:
            found = out.setdefault(_unescape(session), _Facts(at))
            found.values[key] = content
            found.first, found.last = min(found.first, at), max(found.last, at)
    return out


def _snapshot(
    session: str, rows: list[tuple[Message, float]], facts: _Facts | None, counts: dict[str, int]
) -> SessionSnapshot:
    messages = repaired([m for m, _ in rows], "interrupted")
    kept = {id(m) for m in messages}
    counts["dropped"] += sum(isinstance(m, ToolMessage) and id(m) not in kept for m, _ in rows)
    when = {id(m): at for m, at in rows}
    times = [at for _, at in rows] + ([facts.first, facts.last] if facts else [])
    entries: list[LogEntry] = []
    at = min(times)
    for index, message in enumerate(messages):
        at = when.get(id(message), at)  # a synthetic result: its call's time
        entries.append(LogEntry(index=index, turn="migrated", created_at=at, message=message))
    record = SessionRecord(
        id=session,
        turns=sum(isinstance(m, UserMessage) for m in messages),
        last_index=len(entries) - 1,
        created_at=min(times),
        updated_at=max(times),
        version=1,
    )
    return SessionSnapshot(record=record, facts=facts.values if facts else {}, entries=entries)


def _snapshots(conn: sqlite3.Connection, counts: dict[str, int]) -> Iterator[SessionSnapshot]:
    """One snapshot per session, built while the source rows stream by (one session's
    rows in memory at a time)."""
    facts = _facts(conn)
    session: str | None = None
    rows: list[tuple[Message, float]] = []
    for id, content, created_at in _rows(conn, _CONV):
        escaped, sep, _ = id[len(_CONV) :].rpartition(":")
        if not sep:
            counts["dropped"] += 1
            continue
        if _unescape(escaped) != session:
            if session is not None and rows:
                yield _snapshot(session, rows, facts.pop(session, None), counts)
            session, rows = _unescape(escaped), []
        message = _message(content)
        if message is None:
            counts["dropped"] += 1
        else:
            rows.append((message, created_at))
    if session is not None and rows:
        yield _snapshot(session, rows, facts.pop(session, None), counts)
    for session, found in sorted(facts.items()):  # sessions with facts and no transcript
        yield _snapshot(session, [], found, counts)


def memory_transcripts(source: str | Path, counts: dict[str, int]) -> Iterator[SessionSnapshot]:
    """The sessions an older memory file holds, one snapshot at a time (the rules of the
    module doc); the file is opened read-only. ``counts["dropped"]`` grows by the rows
    that were not chat messages and the results whose call was gone. A file without
    memory items yields nothing; a missing file is :class:`FileNotFoundError`."""
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no memory file at {path}")
    counts.setdefault("dropped", 0)
    with storage_errors():
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            if _has_items(conn):
                yield from _snapshots(conn, counts)
        finally:
            conn.close()


@contextlib.contextmanager
def _source(backend: SqliteSessionBackend, source: str) -> Iterator[sqlite3.Connection | None]:
    path = Path(source)
    if not path.exists():
        yield None
    elif path.resolve() == backend.path.resolve():
        yield backend.connection
    else:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            yield conn
        finally:
            conn.close()


def _has_items(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'items'")
    return found.fetchone() is not None


def migrate_memory_transcripts(
    backend: SqliteSessionBackend, source: str
) -> MigrationReport | None:
    """Copy the transcripts of the memory file ``source`` into ``backend``, once.

    Returns what was copied, or None when there was nothing to do (done before, no such
    file, or no memory items in it).
    """
    conn = backend.connection
    counts = {"sessions": 0, "messages": 0, "dropped": 0, "skipped_existing": 0}

    def restore(snapshot: SessionSnapshot) -> None:
        if backend.record(snapshot.record.id) is not None:
            counts["skipped_existing"] += 1
            return
        _ops.restore(backend, RestoreSession(snapshot), 0.0)
        counts["sessions"] += 1
        counts["messages"] += len(snapshot.entries)

    def done() -> MigrationReport:
        report = MigrationReport(source=source, **counts)
        set_meta(conn, MIGRATED_KEY, _encoder.encode(report).decode())
        return report

    with storage_errors():
        if get_meta(conn, MIGRATED_KEY) is not None:
            return None
        with _source(backend, source) as src:
            if src is None or not _has_items(src):
                return None
            conn.execute("BEGIN IMMEDIATE")
            try:
                for snapshot in _snapshots(src, counts):
                    restore(snapshot)
                report = done()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    return report
