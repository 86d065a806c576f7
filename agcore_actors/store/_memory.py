"""The in-memory backend: for tests and bots whose sessions need not outlive the process.

Messages are kept encoded, as in SQLite, so a caller's objects are never shared with the
store and both backends decode the same bytes. Sessions are indexed by
``(updated_at, id)`` in a sorted list, so ``ListSessions`` and ``ExpireSessions`` read
a page without scanning every session (an update costs a bisect and a list move).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import outcome

from ..llm import Message, ToolMessage
from ._backend import Operation, decode_message, decode_messages, encode_message, encode_messages
from .messages import LogEntry, SessionRecord, SessionStatus


class _Session:
    __slots__ = ("facts", "log", "record", "summary")

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.summary = b"[]"
        #: (turn, created_at, is a tool message, body)
        self.log: list[tuple[str, float, bool, bytes]] = []
        self.facts: dict[str, str] = {}


class InMemorySessionBackend:
    """Sessions in dictionaries (see the module doc)."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._order: list[tuple[float, str]] = []

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
        bisect.insort(self._order, (record.updated_at, record.id))
        if summary is not None:
            found.summary = encode_messages(summary)

    def _unindex(self, record: SessionRecord) -> None:
        key = (record.updated_at, record.id)
        at = bisect.bisect_left(self._order, key)
        assert self._order[at] == key
        del self._order[at]

    def append(self, session: str, entries: Sequence[LogEntry]) -> None:
        log = self._sessions[session].log
        for e in entries:
            assert e.index == len(log)
            is_tool = isinstance(e.message, ToolMessage)
            log.append((e.turn, e.created_at, is_tool, encode_message(e.message)))

    def update_facts(self, session: str, removed: Sequence[str], values: dict[str, str]) -> None:
        facts = self._sessions[session].facts
        for key in removed:
            facts.pop(key, None)
        facts.update(values)

    def facts(self, session: str) -> dict[str, str]:
        return dict(sorted(self._sessions[session].facts.items()))

    def entries(self, session: str, start: int, stop: int) -> list[LogEntry]:
        log = self._sessions[session].log
        return [
            LogEntry(
                index=i, turn=log[i][0], created_at=log[i][1], message=decode_message(log[i][3])
            )
            for i in range(start, stop)
        ]

    def messages(self, session: str, start: int, stop: int) -> list[Message]:
        return [decode_message(row[3]) for row in self._sessions[session].log[start:stop]]

    def is_tool(self, session: str, index: int) -> bool:
        return self._sessions[session].log[index][2]

    def group_start(self, session: str, index: int) -> int:
        log = self._sessions[session].log
        while index > 0 and log[index][2]:
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
        for at in range(0 if after is None else bisect.bisect_right(order, after), len(order)):
            updated_at, session = order[at]
            if len(out) >= limit or (idle_before is not None and updated_at >= idle_before):
                break
            record = self._sessions[session].record
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
        return gone

    def close(self) -> None:
        pass
