"""The in-memory backend: for tests and bots whose sessions need not outlive the process.

Messages are kept encoded, as in SQLite, so a caller's objects are never shared with the
store and both backends decode the same bytes. Sessions are indexed by
``(updated_at, id)`` in a sorted list of their records, so ``ListSessions`` and
``ExpireSessions`` read a page without scanning every session (an update costs a bisect
and a list move).

Memory: a session is one object, the list of its encoded messages, holding its record,
its runs (``start, turn, created_at`` once per run of messages sharing turn and time, as
each write's messages do) and, only when it has them, a summary and facts. Whether a
message is a tool message is read from its body, where msgspec writes the role first.
Every field reads back as written (``-0.0`` stays ``-0.0``, ``1`` stays ``1``).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Sequence
from typing import Any

import outcome

from ..llm import Message
from ._backend import (
    Operation,
    _message_decoder,
    decode_messages,
    encode_messages,
    release_each,
    renew_each,
)
from ._blobs import BlobShelf
from .messages import HostRecord, Lease, LeaseRef, LogEntry, SessionRecord, SessionStatus

#: Where the role of an encoded message starts: msgspec writes the tag field first.
_ROLE_AT = len(b'{"role":"')
#: The first letter of the tool role, which no other role starts with.
_T = ord("t")
#: The summary of a session never compacted, shared by all of them.
_NO_SUMMARY = encode_messages([])
#: Runs kept in one exact-size tuple up to this many items (3 per run), a list beyond.
_TUPLE_RUNS = 48
_updated_at = operator.attrgetter("updated_at")
_id = operator.attrgetter("id")
_decode = _message_decoder.decode

#: ``start: int, turn: str, created_at: float`` of each run of the log, flat: a run is
#: the messages from its start up to the next run's start, which share its turn and time.
_Runs = tuple[Any, ...] | list[Any]


def _same_time(a: float, b: float) -> bool:
    # Equal floats that still differ when read back (0.0 and -0.0, 1 and 1.0) do not merge.
    return a is b or (a == b and a != 0 and type(a) is type(b))


class _Session(list[bytes]):
    """A session: the list of its log's encoded messages (one per index), and the rest.

    One object rather than a holder and a list: it is what every idle session costs.
    """

    __slots__ = ("facts", "record", "runs", "summary")

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.summary = _NO_SUMMARY
        self.runs: _Runs = ()
        #: None while the session has no facts.
        self.facts: dict[str, str] | None = None

    def add_run(self, start: int, turn: str, created_at: float) -> None:
        runs = self.runs
        if isinstance(runs, list):
            runs += (start, turn, created_at)
        elif len(runs) < _TUPLE_RUNS:
            self.runs = (*runs, start, turn, created_at)  # exact size: most logs are short
        else:
            self.runs = [*runs, start, turn, created_at]


def _bisect(order: list[SessionRecord], updated_at: float, session: str, right: bool) -> int:
    """Where ``(updated_at, session)`` goes in ``order``: before an equal key, or after
    it if ``right``. Bisects on the time alone, then on the id among equal times."""
    at = bisect.bisect_left(order, updated_at, key=_updated_at)
    if at == len(order) or order[at].updated_at != updated_at:
        return at
    end = bisect.bisect_right(order, updated_at, lo=at, key=_updated_at)
    side = bisect.bisect_right if right else bisect.bisect_left
    return side(order, session, lo=at, hi=end, key=_id)


class InMemorySessionBackend:
    """Sessions in dictionaries (see the module doc)."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        #: Every record, ordered by ``(updated_at, id)``.
        self._order: list[SessionRecord] = []
        self._leases: dict[str, Lease] = {}
        self._hosts: dict[str, HostRecord] = {}
        #: The media of messages (see :mod:`._blobs`): bytes by hash, and the sessions
        #: that refer to each.
        self._blob_data: dict[str, bytes] = {}
        self.blobs = BlobShelf(self._blob)
        self._blob_refs: dict[str, set[str]] = {}
        self._held: dict[str, set[str]] = {}

    def run_batch(self, operations: Sequence[Operation], write: bool) -> list[outcome.Outcome[Any]]:
        return [outcome.capture(op) for op in operations]

    def record(self, session: str) -> SessionRecord | None:
        found = self._sessions.get(session)
        return None if found is None else found.record

    def summary(self, session: str) -> list[Message]:
        return decode_messages(self._sessions[session].summary)

    def put_record(
        self, record: SessionRecord, *, new: bool, summary: Sequence[Message] | None = None
    ) -> None:
        if new:
            found = self._sessions[record.id] = _Session(record)
        else:
            found = self._sessions[record.id]
            self._unindex(found.record)
            found.record = record
        order = self._order
        if not order or order[-1].updated_at < record.updated_at:
            order.append(record)  # the common case: the session just written is the newest
        else:
            order.insert(_bisect(order, record.updated_at, record.id, True), record)
        if summary is not None:
            found.summary = encode_messages(summary) if summary else _NO_SUMMARY

    def _unindex(self, record: SessionRecord) -> None:
        order = self._order
        at = bisect.bisect_left(order, record.updated_at, key=_updated_at)
        if order[at] is not record:  # another session has the same time
            at = _bisect(order, record.updated_at, record.id, False)
            assert order[at] is record
        del order[at]

    def _blob(self, digest: str) -> bytes | None:
        return self._blob_data.get(digest)

    def append(self, session: str, entries: Sequence[LogEntry]) -> None:
        # Everything encoded before anything is kept: a bad part leaves no trace.
        encoded = [self.blobs.encode(e.message) for e in entries]
        for _, blobs in encoded:
            for blob in blobs:
                self._blob_data.setdefault(blob.sha256, blob.data)
                self._blob_refs.setdefault(blob.sha256, set()).add(session)
                self._held.setdefault(session, set()).add(blob.sha256)
        found = self._sessions[session]
        runs = found.runs
        if runs:
            turn, created_at = runs[-2], runs[-1]
        else:
            turn, created_at = "", 0.0
        for e, (body, _) in zip(entries, encoded, strict=True):
            assert e.index == len(found)
            if not runs or e.turn != turn or not _same_time(e.created_at, created_at):
                turn, created_at = e.turn, e.created_at
                found.add_run(e.index, turn, created_at)
                runs = found.runs
            found.append(body)

    def update_facts(self, session: str, removed: Sequence[str], values: dict[str, str]) -> None:
        found = self._sessions[session]
        facts = found.facts
        if facts is None:
            if values:
                found.facts = dict(values)
            return
        for key in removed:
            facts.pop(key, None)
        facts.update(values)
        if not facts:
            found.facts = None

    def facts(self, session: str) -> dict[str, str]:
        facts = self._sessions[session].facts
        return {} if facts is None else dict(sorted(facts.items()))

    def has_turn(self, session: str, turn: str) -> bool:
        found = self._sessions.get(session)
        return found is not None and turn in found.runs[1::3]

    def entries(self, session: str, start: int, stop: int) -> list[LogEntry]:
        found = self._sessions[session]
        decode = self.blobs.decode
        runs = found.runs
        last = len(runs) - 3
        out: list[LogEntry] = []
        add = out.append
        k = -3  # the run of index i is runs[k : k + 3]
        following = start  # the index at which the run after it starts
        turn, created_at = "", 0.0
        for i in range(start, stop):
            while i >= following:
                k += 3
                turn, created_at = runs[k + 1], runs[k + 2]
                following = runs[k + 3] if k < last else stop
            add(LogEntry(index=i, turn=turn, created_at=created_at, message=decode(found[i])))
        return out

    def messages(self, session: str, start: int, stop: int) -> list[Message]:
        return list(map(self.blobs.decode, self._sessions[session][start:stop]))

    def is_tool(self, session: str, index: int) -> bool:
        return self._sessions[session][index][_ROLE_AT] == _T

    def group_start(self, session: str, index: int) -> int:
        found = self._sessions[session]
        while index > 0 and found[index][_ROLE_AT] == _T:
            index -= 1
        return index

    def page(
        self,
        idle_before: float | None,
        status: SessionStatus | None,
        after: tuple[float, str] | None,
        limit: int,
    ) -> list[SessionRecord]:
        order = self._order
        out: list[SessionRecord] = []
        first = 0 if after is None else _bisect(order, *after, True)
        for at in range(first, len(order)):
            record = order[at]
            if len(out) >= limit or (idle_before is not None and record.updated_at >= idle_before):
                break
            if status is None or record.status == status:
                out.append(record)
        return out

    def delete(self, sessions: Sequence[str]) -> list[str]:
        gone: list[str] = []
        for session in sessions:
            found = self._sessions.pop(session, None)
            if found is not None:
                self._unindex(found.record)
                gone.append(session)
                for digest in self._held.pop(session, ()):
                    holders = self._blob_refs[digest]
                    holders.discard(session)
                    if not holders:
                        del self._blob_refs[digest], self._blob_data[digest]
        return gone

    # -- leases and hosts -------------------------------------------------------------

    def clock(self, now: float) -> float:
        return now

    def lease(self, session: str, *, lock: bool) -> Lease | None:
        return self._leases.get(session)

    def put_lease(self, lease: Lease) -> None:
        self._leases[lease.session] = lease

    def renew_leases(
        self, host: str, leases: Sequence[LeaseRef], now: float, until: float
    ) -> tuple[list[str], bool]:
        return renew_each(self, host, leases, now, until)

    def release_leases(self, host: str, leases: Sequence[LeaseRef], now: float) -> list[str]:
        return release_each(self, host, leases, now)

    def host(self, host: str) -> HostRecord | None:
        return self._hosts.get(host)

    def put_host(self, record: HostRecord) -> None:
        self._hosts[record.host] = record

    def hosts(self) -> list[HostRecord]:
        return [self._hosts[h] for h in sorted(self._hosts)]

    def delete_host(self, host: str) -> bool:
        return self._hosts.pop(host, None) is not None

    def close(self) -> None:
        pass
