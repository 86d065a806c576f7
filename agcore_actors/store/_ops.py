"""The protocol's behaviour, once, over a backend's primitives.

Each function applies one request at time ``now`` (the caller's clock) and returns its
reply. Every check comes before the first write, so a request that raises one of the
asker's errors writes nothing, on any backend. A fenced write checks its fence first
(:func:`._leases.check_fence`), in its own transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..llm import Message, ToolMessage, Usage
from ._backend import Backend, decode_cursor, encode_cursor
from ._errors import (
    Conflict,
    ConflictReason,
    InvalidRequest,
    InvalidTranscript,
    SessionNotFound,
    TurnExists,
)
from ._leases import check_fence
from ._rules import closed, pending_after, synthetic_results
from .messages import (
    AppendTurn,
    BeginTurn,
    BeginTurnAndLoad,
    CommitTurn,
    Compaction,
    Deleted,
    DeleteSessions,
    ExpireSessions,
    ExportSession,
    HasTurn,
    ListSessions,
    LoadedSession,
    LoadSession,
    LogEntry,
    RepairInterrupted,
    RestoreSession,
    SessionPage,
    SessionRecord,
    SessionSnapshot,
    UpdateSession,
)

#: The most sessions one ListSessions page may ask for.
MAX_PAGE = 10_000
_replace = msgspec.structs.replace


def _non_empty(what: str, value: str) -> None:
    if not value:
        raise InvalidRequest(f"{what} must be a non-empty string")


def _current(b: Backend, session: str, expected: int, *, create: bool) -> SessionRecord | None:
    """The stored record, checked against ``expected`` (0 = absent, when ``create``)."""
    _non_empty("session", session)
    record = b.record(session)
    if record is None:
        if not create or expected != 0:
            raise SessionNotFound(session)
        return None
    if record.version != expected:
        raise Conflict(session, "version", expected=expected, actual=record.version)
    return record


def _open(b: Backend, session: str, turn: str, expected: int | None) -> SessionRecord:
    """The record of a session whose open turn is ``turn``."""
    _non_empty("turn", turn)
    if expected is None:
        _non_empty("session", session)
        found = b.record(session)
        if found is None:
            raise SessionNotFound(session)
        record = found
    else:
        checked = _current(b, session, expected, create=False)
        assert checked is not None
        record = checked
    if record.open_turn != turn:
        reason: ConflictReason = "no_open_turn" if record.open_turn is None else "turn_mismatch"
        raise Conflict(session, reason, expected=expected, actual=record.version)
    return record


def _new(session: str, now: float) -> SessionRecord:
    return SessionRecord(id=session, created_at=now, updated_at=now, version=0)


def _entries(after: int, turn: str, now: float, messages: Sequence[Message]) -> list[LogEntry]:
    return [
        LogEntry(index=after + 1 + i, turn=turn, created_at=now, message=m)
        for i, m in enumerate(messages)
    ]


def _check_facts(values: dict[str, str], removed: Sequence[str]) -> None:
    for key in (*values, *removed):
        if not isinstance(key, str) or not key:
            raise InvalidRequest("fact keys must be non-empty strings")


def _check_usage(usage: Usage) -> None:
    if min(msgspec.structs.astuple(usage)) < 0:
        raise InvalidRequest(f"token counts must not be negative: {usage}")


def _usage(total: Usage, delta: Usage) -> Usage:
    _check_usage(delta)
    return total + delta


# -- turns ------------------------------------------------------------------------------


def begin(b: Backend, m: BeginTurn | BeginTurnAndLoad, now: float) -> SessionRecord:
    check_fence(b, m.session, m.fence, now)
    return _begin(b, m, now)


def _begin(b: Backend, m: BeginTurn | BeginTurnAndLoad, now: float) -> SessionRecord:
    _non_empty("turn", m.turn)
    record = _current(b, m.session, m.expected_version, create=True)
    if record is not None and record.open_turn is not None:
        raise Conflict(m.session, "turn_open", expected=m.expected_version, actual=record.version)
    if record is not None and b.has_turn(m.session, m.turn):
        raise TurnExists(m.session, m.turn)
    base = record or _new(m.session, now)
    pending = pending_after(base.pending_calls, m.messages)
    new = _replace(
        base,
        agent=base.agent if m.agent is None else m.agent,
        status="running",
        open_turn=m.turn,
        turns=base.turns + 1,
        last_index=base.last_index + len(m.messages),
        pending_calls=tuple(pending),
        updated_at=now,
        version=base.version + 1,
    )
    b.put_record(new, new=record is None, summary=[] if record is None else None)
    b.append(m.session, _entries(base.last_index, m.turn, now, m.messages))
    return new


def begin_and_load(b: Backend, m: BeginTurnAndLoad, now: float) -> LoadedSession:
    check_fence(b, m.session, m.fence, now)
    _check_tail(m.tail)  # before anything is written
    _begin(b, m, now)
    tail = None if m.tail is None else m.tail + len(m.messages)
    return load(b, LoadSession(m.session, tail), now)


def append_turn(b: Backend, m: AppendTurn, now: float) -> SessionRecord:
    check_fence(b, m.session, m.fence, now)
    record = _open(b, m.session, m.turn, m.expected_version)
    pending = pending_after(record.pending_calls, m.messages)
    new = _replace(
        record,
        last_index=record.last_index + len(m.messages),
        pending_calls=tuple(pending),
        usage=_usage(record.usage, m.usage_delta),
        updated_at=now,
        version=record.version + 1,
    )
    b.put_record(new, new=False)
    b.append(m.session, _entries(record.last_index, m.turn, now, m.messages))
    return new


def _check_compaction(
    b: Backend, record: SessionRecord, added: Sequence[Message], c: Compaction
) -> None:
    end = record.last_index + len(added) + 1  # the log's length after the commit
    if not record.compacted_upto <= c.upto <= end:
        raise InvalidRequest(
            f"compaction upto {c.upto} is outside [{record.compacted_upto}, {end}]"
        )
    closed(pending_after([], c.summary), "the compaction summary")
    if c.upto < end:
        first = c.upto - record.last_index - 1  # in ``added`` when >= 0
        cut = isinstance(added[first], ToolMessage) if first >= 0 else b.is_tool(record.id, c.upto)
        if cut:
            raise InvalidTranscript(
                f"compaction upto {c.upto} would cut a tool result from its call"
            )


def commit(b: Backend, m: CommitTurn, now: float) -> SessionRecord:
    check_fence(b, m.session, m.fence, now)
    record = _open(b, m.session, m.turn, m.expected_version)
    closed(pending_after(record.pending_calls, m.messages), "the turn")
    _check_facts(m.facts_set, m.facts_removed)
    usage = _usage(record.usage, m.usage_delta)
    if m.compaction is not None:
        _check_compaction(b, record, m.messages, m.compaction)
    new = _replace(
        record,
        agent=record.agent if m.agent is None else m.agent,
        status="idle",
        open_turn=None,
        last_index=record.last_index + len(m.messages),
        compacted_upto=record.compacted_upto if m.compaction is None else m.compaction.upto,
        pending_calls=(),
        usage=usage,
        updated_at=now,
        version=record.version + 1,
    )
    summary = None if m.compaction is None else m.compaction.summary
    b.put_record(new, new=False, summary=summary)
    b.append(m.session, _entries(record.last_index, m.turn, now, m.messages))
    b.update_facts(m.session, m.facts_removed, m.facts_set)
    return new


def repair(b: Backend, m: RepairInterrupted, now: float) -> SessionRecord:
    check_fence(b, m.session, m.fence, now)
    record = _open(b, m.session, m.turn, m.expected_version)
    results = synthetic_results(record.pending_calls, "interrupted")
    new = _replace(
        record,
        status="interrupted",
        open_turn=None,
        last_index=record.last_index + len(results),
        pending_calls=(),
        updated_at=now,
        version=record.version + 1,
    )
    b.put_record(new, new=False)
    b.append(m.session, _entries(record.last_index, m.turn, now, results))
    return new


def update(b: Backend, m: UpdateSession, now: float) -> SessionRecord:
    check_fence(b, m.session, m.fence, now)
    record = _current(b, m.session, m.expected_version, create=True)
    _check_facts(m.facts_set, m.facts_removed)
    base = record or _new(m.session, now)
    new = _replace(
        base,
        agent=base.agent if m.agent is None else m.agent,
        updated_at=now,
        version=base.version + 1,
    )
    b.put_record(new, new=record is None, summary=[] if record is None else None)
    b.update_facts(m.session, m.facts_removed, m.facts_set)
    return new


# -- reads ------------------------------------------------------------------------------


def _found(b: Backend, session: str) -> SessionRecord:
    _non_empty("session", session)
    record = b.record(session)
    if record is None:
        raise SessionNotFound(session)
    return record


def _check_tail(tail: int | None) -> None:
    if tail is not None and tail < 0:
        raise InvalidRequest(f"tail must be >= 0 or None, not {tail}")


def load(b: Backend, m: LoadSession, now: float) -> LoadedSession:
    _check_tail(m.tail)
    _non_empty("session", m.session)
    record = b.record(m.session)
    if record is None:
        if not m.missing_ok:
            raise SessionNotFound(m.session)
        new = _new(m.session, now)  # not stored
        return LoadedSession(record=new, summary=[], first_index=0, messages=[], facts={})
    end = record.last_index + 1
    start = record.compacted_upto
    if m.tail is not None and end - m.tail > start:
        start = end if m.tail == 0 else max(start, b.group_start(m.session, end - m.tail))
    open_start: int | None = None
    if record.open_turn is None:
        messages = b.messages(m.session, start, end)
    else:
        # Where the open turn starts, for a session that resumes it (rare: read entries).
        entries = b.entries(m.session, start, end)
        messages = [entry.message for entry in entries]
        open_start = next((e.index for e in entries if e.turn == record.open_turn), None)
        if open_start == start and start > 0:  # the turn may begin before the tail
            before = b.entries(m.session, start - 1, start)
            if before and before[0].turn == record.open_turn:
                open_start = None
    return LoadedSession(
        record=record,
        summary=b.summary(m.session) if record.compacted_upto else [],
        first_index=start,
        messages=messages,
        facts=b.facts(m.session),
        open_turn_start=open_start,
    )


def list_sessions(b: Backend, m: ListSessions, now: float) -> SessionPage:
    if not 1 <= m.limit <= MAX_PAGE:
        raise InvalidRequest(f"limit must be in [1, {MAX_PAGE}], not {m.limit}")
    after = None if m.cursor is None else decode_cursor(m.cursor)
    records = b.page(m.idle_before, m.status, after, m.limit + 1)
    if len(records) <= m.limit:
        return SessionPage(records)
    last = records[m.limit - 1]
    return SessionPage(records[: m.limit], encode_cursor(last.updated_at, last.id))


def export(b: Backend, m: ExportSession, now: float) -> SessionSnapshot:
    record = _found(b, m.session)
    return SessionSnapshot(
        record=record,
        summary=b.summary(m.session) if record.compacted_upto else [],
        facts=b.facts(m.session),
        entries=b.entries(m.session, 0, record.last_index + 1),
    )


def has_turn(b: Backend, m: HasTurn, now: float) -> bool:
    _non_empty("session", m.session)
    return b.has_turn(m.session, m.turn)


# -- whole sessions ---------------------------------------------------------------------


def delete(b: Backend, m: DeleteSessions, now: float) -> Deleted:
    for session in m.ids:
        _non_empty("session", session)
    ids = list(dict.fromkeys(m.ids))
    if m.fence is not None:
        if len(ids) != 1:
            raise InvalidRequest(f"a fenced delete names one session, not {len(ids)}")
        check_fence(b, ids[0], m.fence, now)
    return Deleted(b.delete(ids))


def expire(b: Backend, m: ExpireSessions, now: float) -> Deleted:
    if m.limit < 1:
        raise InvalidRequest(f"limit must be >= 1, not {m.limit}")
    return Deleted(b.delete([r.id for r in b.page(m.idle_before, None, None, m.limit)]))


def restore(b: Backend, m: RestoreSession, now: float) -> SessionRecord:
    snap = m.snapshot
    rec = snap.record
    _non_empty("session", rec.id)
    check_fence(b, rec.id, m.fence, now)
    if [e.index for e in snap.entries] != list(range(len(snap.entries))):
        raise InvalidRequest("snapshot entries must be numbered 0, 1, 2, ... without gaps")
    if rec.last_index != len(snap.entries) - 1:
        raise InvalidRequest(f"record.last_index {rec.last_index} != {len(snap.entries) - 1}")
    messages = [e.message for e in snap.entries]
    pending = pending_after([], messages)
    if rec.open_turn is None:
        closed(pending, "the snapshot's log")
    if (rec.status == "running") != (rec.open_turn is not None):
        raise InvalidRequest("status 'running' goes with an open turn, and only it")
    _check_facts(snap.facts, [])
    _check_usage(rec.usage)
    c = Compaction(rec.compacted_upto, snap.summary)
    closed(pending_after([], c.summary), "the snapshot's summary")
    if not 0 <= c.upto <= len(messages) or (
        c.upto < len(messages) and isinstance(messages[c.upto], ToolMessage)
    ):
        raise InvalidTranscript(f"compacted_upto {c.upto} does not start a valid history")
    old = b.record(rec.id)
    if old is not None and not m.replace:
        raise Conflict(rec.id, "exists", expected=0, actual=old.version)
    new = _replace(rec, pending_calls=tuple(pending), version=1 if old is None else old.version + 1)
    if old is not None:
        b.delete([rec.id])
    b.put_record(new, new=True, summary=snap.summary)
    b.append(rec.id, snap.entries)
    b.update_facts(rec.id, [], snap.facts)
    return new
