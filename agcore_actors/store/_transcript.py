"""Export and import one session as JSON Lines, through the store's protocol.

The format: a header line, then one line per message of the raw log::

    {"type":"session","record":{...},"summary":[...],"facts":{...}}
    {"type":"message","index":0,"turn":"t1","created_at":1717.0,"message":{"role":"user",...}}
    ...

Messages are in the OpenAI chat shape. Export reads the whole session in one request
(:class:`~agcore_actors.store.messages.ExportSession`), so the file is one consistent
state. Import writes it in one request
(:class:`~agcore_actors.store.messages.RestoreSession`): all of it or nothing, checked
by the same rules as every write. A file without a header (one chat message per line,
as the memory store's ``ExportTranscript`` wrote) is accepted too: it becomes an idle
session whose messages all belong to turn ``"imported"``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import msgspec

from ..actor import ActorRef
from ..llm import Message, UserMessage, message_from_json
from ._errors import InvalidRequest
from ._rules import repaired
from .messages import (
    ExportSession,
    LogEntry,
    RestoreSession,
    SessionRecord,
    SessionSnapshot,
    StoreMsg,
)

__all__ = ["export_session", "import_session", "snapshot_from_jsonl", "snapshot_to_jsonl"]


class _Header(msgspec.Struct, frozen=True, tag_field="type", tag="session", kw_only=True):
    record: SessionRecord
    summary: list[Message] = []
    facts: dict[str, str] = {}


class _Line(msgspec.Struct, frozen=True, tag_field="type", tag="message", kw_only=True):
    index: int
    turn: str
    created_at: float
    message: Message


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Header | _Line)


def snapshot_to_jsonl(snapshot: SessionSnapshot) -> str:
    """The snapshot as JSON Lines (header first), ``\\n``-terminated."""
    lines: list[_Header | _Line] = [
        _Header(record=snapshot.record, summary=snapshot.summary, facts=snapshot.facts)
    ]
    lines.extend(
        _Line(index=e.index, turn=e.turn, created_at=e.created_at, message=e.message)
        for e in snapshot.entries
    )
    return "".join(_encoder.encode(line).decode() + "\n" for line in lines)


def _plain(lines: list[tuple[int, str]], session: str | None, now: float) -> SessionSnapshot:
    if not lines:
        raise InvalidRequest("nothing to import: no session header and no message")
    if session is None:
        raise InvalidRequest("a transcript without a session header needs a session id")
    messages: list[Message] = []
    for number, line in lines:
        try:
            messages.append(message_from_json(line))
        except ValueError as exc:
            raise InvalidRequest(f"line {number}: {exc}") from None
    entries = [
        LogEntry(index=i, turn="imported", created_at=now, message=m)
        for i, m in enumerate(messages)
    ]
    record = SessionRecord(
        id=session,
        turns=sum(isinstance(m, UserMessage) for m in messages),
        last_index=len(entries) - 1,
        created_at=now,
        updated_at=now,
        version=1,
    )
    return SessionSnapshot(record=record, entries=entries)


def snapshot_from_jsonl(
    text: str | Iterable[str], *, session: str | None = None, now: float | None = None
) -> SessionSnapshot:
    """Parse an export (or a plain transcript); :class:`InvalidRequest` names the bad line.

    ``session`` renames the session (required for a plain transcript); ``now`` stamps a
    plain transcript's messages (default: ``time.time()``, read here).
    """
    # Only "\n" ends a line: JSON leaves U+2028, U+2029 and U+0085 unescaped in strings,
    # and str.splitlines() would cut a message there.
    raw = text.split("\n") if isinstance(text, str) else text
    lines = [(n, line) for n, line in enumerate(raw, start=1) if line.strip()]
    if not lines or '"type":"session"' not in lines[0][1].replace(" ", ""):
        return _plain(lines, session, time.time() if now is None else now)
    header: _Header | None = None
    entries: list[LogEntry] = []
    for number, line in lines:
        try:
            item = _decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise InvalidRequest(f"line {number}: {exc}") from None
        if isinstance(item, _Header):
            if header is not None:
                raise InvalidRequest(f"line {number}: a second session header")
            header = item
        else:
            entries.append(
                LogEntry(
                    index=item.index,
                    turn=item.turn,
                    created_at=item.created_at,
                    message=item.message,
                )
            )
    assert header is not None
    record = header.record
    if session is not None:
        record = msgspec.structs.replace(record, id=session)
    return SessionSnapshot(
        record=record, summary=header.summary, facts=header.facts, entries=entries
    )


async def export_session(store: ActorRef[StoreMsg], session: str) -> str:
    """Session ``session`` as JSON Lines (see the module doc); one read of the store."""
    return snapshot_to_jsonl(await store.ask(ExportSession(session)))


async def import_session(
    store: ActorRef[StoreMsg],
    text: str | Iterable[str],
    *,
    session: str | None = None,
    replace: bool = False,
    repair: bool = False,
    now: float | None = None,
) -> SessionRecord:
    """Write an export (or a plain transcript) as one session, in one request.

    ``session`` renames it; ``replace`` overwrites an existing session of that id
    (otherwise :class:`~agcore_actors.store.Conflict`); ``repair`` first makes the log
    valid (drops results without a call, answers calls left open with
    ``Error: tool call interrupted``) instead of refusing it with
    :class:`~agcore_actors.store.InvalidTranscript` (transcripts written under the
    memory store's sliding window may need it).
    """
    snapshot = snapshot_from_jsonl(text, session=session, now=now)
    if repair:
        snapshot = _repaired(snapshot)
    return await store.ask(RestoreSession(snapshot, replace))


def _repaired(snapshot: SessionSnapshot) -> SessionSnapshot:
    """The snapshot with its log made valid; kept messages keep their turn and time, a
    synthetic result takes those of the message before it."""
    origin = {id(e.message): e for e in snapshot.entries}
    entries: list[LogEntry] = []
    turn, at = "imported", snapshot.record.created_at
    for index, message in enumerate(repaired([e.message for e in snapshot.entries], "interrupted")):
        found = origin.get(id(message))
        if found is not None:
            turn, at = found.turn, found.created_at
        entries.append(LogEntry(index=index, turn=turn, created_at=at, message=message))
    record = msgspec.structs.replace(snapshot.record, last_index=len(entries) - 1)
    return msgspec.structs.replace(snapshot, record=record, entries=entries)
