"""The chaos run's judge: reads PostgreSQL directly, with SQL of its own, and shares no
code with the store it checks (it imports nothing of agcore_actors).

Before the run, :func:`install_audit` puts triggers on the store's tables (``sessions``,
``messages``, ``facts``): every row written, updated or deleted is recorded in
``chaos_audit`` with the writer (the connection's ``application_name``: the harness gives
each host its own), and, read in the same transaction, the session's lease at that moment
(holder, token, expiry, released). The store locks a session's lease row in the
transaction of each of its writes, so this is the lease the write was checked against.

After the run, :func:`judge` counts:

- ``lost``: acknowledged turns (the client saw ``turn_completed``) whose user message or
  answer is not stored under their turn id;
- ``duplicated``: turn ids whose user message is stored more than once in their session
  (a retry with the same id ran the turn again);
- ``fenced_writes_accepted``: writes by a host that did not hold the session's live lease
  when the write committed (another host's lease, a released or expired one, or none),
  plus writes whose lease token is lower than that of an earlier write of the session;
- ``invalid``: sessions whose transcript breaks a rule: indexes ``0..n-1`` without a gap
  and ``last_index`` the last; each turn's messages one contiguous run; each tool
  message answering a call of the assistant message it follows, once; every call
  answered before the next non-tool message, except in the open turn of a session left
  running or interrupted; an idle session has no open turn.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import attrs

_AUDIT = """
CREATE TABLE IF NOT EXISTS chaos_audit (
    id bigserial PRIMARY KEY,
    tbl text NOT NULL,
    op text NOT NULL,
    session text,
    writer text NOT NULL,
    holder text,
    token bigint,
    expires_at double precision,
    released integer,
    at double precision NOT NULL
);
CREATE OR REPLACE FUNCTION chaos_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row jsonb;
    s text;
    l record;
BEGIN
    IF TG_OP = 'DELETE' THEN row := to_jsonb(OLD); ELSE row := to_jsonb(NEW); END IF;
    s := row ->> TG_ARGV[0];
    SELECT host, token, expires_at, released::int AS released INTO l
        FROM leases WHERE session = s;
    INSERT INTO chaos_audit (tbl, op, session, writer, holder, token, expires_at, released, at)
    VALUES (TG_TABLE_NAME, TG_OP, s, current_setting('application_name'), l.host, l.token,
            l.expires_at, l.released, extract(epoch from now()));
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS chaos_audit ON sessions;
DROP TRIGGER IF EXISTS chaos_audit ON messages;
DROP TRIGGER IF EXISTS chaos_audit ON facts;
CREATE TRIGGER chaos_audit AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION chaos_audit_row('id');
CREATE TRIGGER chaos_audit AFTER INSERT OR UPDATE OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION chaos_audit_row('session');
CREATE TRIGGER chaos_audit AFTER INSERT OR UPDATE OR DELETE ON facts
    FOR EACH ROW EXECUTE FUNCTION chaos_audit_row('session');
"""


def tables_exist(url: str) -> bool:
    """Whether the store has made its tables (``leases`` included) in the database."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' "
            "AND table_name IN ('sessions', 'messages', 'facts', 'leases')"
        ).fetchone()
    return row is not None and row[0] == 4


def install_audit(url: str) -> None:
    """The audit triggers (module doc); the store's tables must exist."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_AUDIT)


def held_by(url: str, host: str) -> set[str]:
    """The sessions whose live lease ``host`` holds now, by the server's clock."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT session FROM leases WHERE host = %s AND released::int = 0 "
            "AND expires_at > extract(epoch from now())",
            (host,),
        ).fetchall()
    return {row[0] for row in rows}


@attrs.define
class Verdict:
    lost: list[tuple[str, str]] = attrs.field(factory=list)
    duplicated: list[tuple[str, str]] = attrs.field(factory=list)
    fenced: list[str] = attrs.field(factory=list)
    invalid: dict[str, str] = attrs.field(factory=dict)
    audited_writes: int = 0
    sessions: int = 0
    messages: int = 0

    def line(self, max_failover: float) -> str:
        return (
            f"lost={len(self.lost)} duplicated={len(self.duplicated)} "
            f"fenced_writes_accepted={len(self.fenced)} invalid={len(self.invalid)} "
            f"max_failover_s={max_failover:.2f}"
        )


def judge(url: str, acked: Iterable[tuple[str, str]], audited: bool = True) -> Verdict:
    """Count what went wrong (module doc); ``acked``: (session, turn) pairs."""
    import psycopg

    verdict = Verdict()
    with psycopg.connect(url) as conn:
        records = {
            row[0]: row[1:]
            for row in conn.execute("SELECT id, status, open_turn, last_index FROM sessions")
        }
        logs: dict[str, list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)
        for session, idx, turn, body in conn.execute(
            "SELECT session, idx, turn, body FROM messages ORDER BY session, idx"
        ):
            logs[session].append((idx, turn, body if isinstance(body, dict) else json.loads(body)))
        audit = (
            conn.execute(
                "SELECT id, tbl, op, session, writer, holder, token, expires_at, released, at "
                "FROM chaos_audit ORDER BY id"
            ).fetchall()
            if audited
            else []
        )
    verdict.sessions = len(records)
    verdict.messages = sum(len(log) for log in logs.values())
    users: Counter[tuple[str, str]] = Counter()
    answered: set[tuple[str, str]] = set()
    for session, log in logs.items():
        for _, turn, body in log:
            if body.get("role") == "user":
                users[session, turn] += 1
            elif body.get("role") == "assistant":
                answered.add((session, turn))
    verdict.duplicated = sorted(key for key, n in users.items() if n > 1)
    verdict.lost = sorted(k for k in set(acked) if users[k] == 0 or k not in answered)
    for session, record in records.items():
        problem = transcript_problem(record, logs.get(session, []))
        if problem is not None:
            verdict.invalid[session] = problem
    verdict.fenced = _fenced(audit)
    verdict.audited_writes = len(audit)
    return verdict


def _fenced(audit: list[tuple[Any, ...]]) -> list[str]:
    out: list[str] = []
    highest: dict[str, int] = {}
    for id_, tbl, op, session, writer, holder, token, expires_at, released, at in audit:
        what = f"#{id_} {op} {tbl} {session} by {writer}"
        if holder is None:
            out.append(f"{what}: no lease")
        elif holder != writer:
            out.append(f"{what}: lease held by {holder} (token {token})")
        elif released:
            out.append(f"{what}: lease released (token {token})")
        elif expires_at <= at:
            out.append(f"{what}: lease expired {at - expires_at:.3f} s before")
        elif token < highest.get(session, 0):
            out.append(f"{what}: token {token} after token {highest[session]}")
        if token is not None:
            highest[session] = max(highest.get(session, 0), token)
    return out


def transcript_problem(
    record: tuple[str, str | None, int], log: list[tuple[int, str, dict[str, Any]]]
) -> str | None:
    """What is wrong with one session's stored transcript, or None (module doc)."""
    status, open_turn, last_index = record
    if [idx for idx, _, _ in log] != list(range(len(log))):
        return "indexes are not 0..n-1"
    if last_index != len(log) - 1:
        return f"last_index {last_index} but {len(log)} messages"
    if status == "idle" and open_turn is not None:
        return "idle with an open turn"
    seen_turns: set[str] = set()
    previous: str | None = None
    unanswered: set[str] = set()
    called: set[str] = set()
    for idx, turn, body in log:
        if turn != previous:
            if turn in seen_turns:
                return f"turn {turn} is split (again at {idx})"
            seen_turns.add(turn)
            previous = turn
        role = body.get("role")
        if role == "tool":
            call = body.get("tool_call_id")
            if call not in unanswered:
                return f"message {idx} answers {call!r}, not an open call"
            unanswered.discard(call)
            continue
        if unanswered:
            return f"message {idx} before calls {sorted(unanswered)} were answered"
        if role == "assistant":
            calls = [c.get("id") for c in body.get("tool_calls") or []]
            if len(set(calls)) != len(calls) or called & set(calls):
                return f"message {idx} repeats a call id"
            called |= set(calls)
            unanswered = set(calls)
    if unanswered and not (status != "idle" and open_turn == previous):
        return f"calls {sorted(unanswered)} never answered"
    return None
