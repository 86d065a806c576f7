"""A plain model of the session store's protocol: dicts and lists, written from the
protocol's documentation (``agcore_actors/store/messages.py``), sharing no code with
the store. Each method returns the reply the store must give, or the error it must
raise as ``(error class name, conflict reason or None)``."""

from __future__ import annotations

from typing import Any

import attrs

from agcore_actors.llm import Message, ToolMessage, Usage
from agcore_actors.store import LoadedSession, SessionRecord
from tests.store.helpers import problems, unanswered

Error = tuple[str, str | None]
Outcome = Any  # a reply struct, or an Error


@attrs.define
class Session:
    id: str
    created: float
    updated: float
    agent: str = ""
    status: str = "idle"
    open_turn: str | None = None
    turns: int = 0
    log: list[tuple[str, float, Message]] = attrs.Factory(list)
    upto: int = 0
    summary: list[Message] = attrs.Factory(list)
    usage: list[int] = attrs.Factory(lambda: [0, 0, 0, 0, 0])
    facts: dict[str, str] = attrs.Factory(dict)
    version: int = 0

    def messages(self) -> list[Message]:
        return [m for _, _, m in self.log]

    def record(self) -> SessionRecord:
        return SessionRecord(
            id=self.id,
            agent=self.agent,
            status=self.status,  # type: ignore[arg-type]
            open_turn=self.open_turn,
            turns=self.turns,
            last_index=len(self.log) - 1,
            compacted_upto=self.upto,
            pending_calls=tuple(unanswered(self.messages())),
            usage=Usage(*self.usage),
            created_at=self.created,
            updated_at=self.updated,
            version=self.version,
        )


def conflict(reason: str) -> Error:
    return ("Conflict", reason)


NOT_FOUND: Error = ("SessionNotFound", None)
BAD_TRANSCRIPT: Error = ("InvalidTranscript", None)
BAD_REQUEST: Error = ("InvalidRequest", None)
TURN_EXISTS: Error = ("TurnExists", None)


class Model:
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}

    # -- helpers ----------------------------------------------------------------------

    def _versioned(self, sid: str, expected: int, create: bool) -> Session | Error | None:
        s = self.sessions.get(sid)
        if s is None:
            return None if create and expected == 0 else NOT_FOUND
        if s.version != expected:
            return conflict("version")
        return s

    def _in_turn(self, sid: str, turn: str, expected: int | None) -> Session | Error:
        s = self.sessions.get(sid)
        if s is None:
            return NOT_FOUND
        if expected is not None and s.version != expected:
            return conflict("version")
        if s.open_turn != turn:
            return conflict("no_open_turn" if s.open_turn is None else "turn_mismatch")
        return s

    @staticmethod
    def _append(s: Session, turn: str, now: float, messages: list[Message]) -> None:
        s.log.extend((turn, now, m) for m in messages)

    # -- requests ---------------------------------------------------------------------

    def begin(
        self,
        sid: str,
        turn: str,
        expected: int,
        messages: list[Message],
        agent: str | None,
        now: float,
    ) -> Outcome:
        found = self._versioned(sid, expected, create=True)
        if isinstance(found, tuple):
            return found
        if found is not None and found.open_turn is not None:
            return conflict("turn_open")
        if found is not None and any(t == turn for t, _, _ in found.log):
            return TURN_EXISTS  # the turn ran (or began) already: not twice
        s = found or Session(sid, now, now)
        if problems(s.messages() + messages, open_end=True):
            return BAD_TRANSCRIPT
        self.sessions[sid] = s
        self._append(s, turn, now, messages)
        s.agent = s.agent if agent is None else agent
        s.status, s.open_turn, s.turns = "running", turn, s.turns + 1
        s.updated, s.version = now, s.version + 1
        return s.record()

    def append(
        self, sid: str, turn: str, expected: int, messages: list[Message], usage: Usage, now: float
    ) -> Outcome:
        s = self._in_turn(sid, turn, expected)
        if isinstance(s, tuple):
            return s
        if problems(s.messages() + messages, open_end=True):
            return BAD_TRANSCRIPT
        self._append(s, turn, now, messages)
        s.usage = [a + b for a, b in zip(s.usage, _counts(usage), strict=True)]
        s.updated, s.version = now, s.version + 1
        return s.record()

    def commit(
        self,
        sid: str,
        turn: str,
        expected: int,
        messages: list[Message],
        usage: Usage,
        facts_set: dict[str, str],
        facts_removed: list[str],
        compaction: tuple[int, list[Message]] | None,
        now: float,
    ) -> Outcome:
        s = self._in_turn(sid, turn, expected)
        if isinstance(s, tuple):
            return s
        after = s.messages() + messages
        if problems(after):
            return BAD_TRANSCRIPT
        if "" in facts_set or "" in facts_removed:
            return BAD_REQUEST
        if compaction is not None:
            upto, summary = compaction
            if not s.upto <= upto <= len(after):
                return BAD_REQUEST
            if problems(summary):
                return BAD_TRANSCRIPT
            if upto < len(after) and isinstance(after[upto], ToolMessage):
                return BAD_TRANSCRIPT
            s.upto, s.summary = upto, list(summary)
        self._append(s, turn, now, messages)
        s.usage = [a + b for a, b in zip(s.usage, _counts(usage), strict=True)]
        self._facts(s, facts_set, facts_removed)
        s.status, s.open_turn = "idle", None
        s.updated, s.version = now, s.version + 1
        return s.record()

    def repair(self, sid: str, turn: str, expected: int | None, now: float) -> Outcome:
        s = self._in_turn(sid, turn, expected)
        if isinstance(s, tuple):
            return s
        synthetic = [
            ToolMessage("Error: tool call interrupted", c) for c in unanswered(s.messages())
        ]
        self._append(s, turn, now, list(synthetic))
        s.status, s.open_turn = "interrupted", None
        s.updated, s.version = now, s.version + 1
        return s.record()

    def update(
        self,
        sid: str,
        expected: int,
        agent: str | None,
        facts_set: dict[str, str],
        facts_removed: list[str],
        now: float,
    ) -> Outcome:
        found = self._versioned(sid, expected, create=True)
        if isinstance(found, tuple):
            return found
        if "" in facts_set or "" in facts_removed:
            return BAD_REQUEST
        s = self.sessions.setdefault(sid, found or Session(sid, now, now))
        s.agent = s.agent if agent is None else agent
        self._facts(s, facts_set, facts_removed)
        s.updated, s.version = now, s.version + 1
        return s.record()

    @staticmethod
    def _facts(s: Session, facts_set: dict[str, str], facts_removed: list[str]) -> None:
        for key in facts_removed:
            s.facts.pop(key, None)
        s.facts.update(facts_set)

    def has_turn(self, sid: str, turn: str) -> Outcome:
        s = self.sessions.get(sid)
        return s is not None and any(t == turn for t, _, _ in s.log)

    def load(self, sid: str, tail: int | None) -> Outcome:
        s = self.sessions.get(sid)
        if s is None:
            return NOT_FOUND
        log = s.messages()
        start = s.upto
        if tail is not None and len(log) - tail > start:
            start = len(log) - tail
            while start > s.upto and start < len(log) and isinstance(log[start], ToolMessage):
                start -= 1
        # The open turn's first message, when the loaded tail has it.
        opened = [
            i
            for i, (turn, _, _) in enumerate(s.log)
            if s.open_turn is not None and turn == s.open_turn
        ]
        open_start = opened[0] if opened and opened[0] >= start else None
        return LoadedSession(
            record=s.record(),
            summary=list(s.summary) if s.upto else [],
            first_index=start,
            messages=log[start:],
            facts=dict(sorted(s.facts.items())),
            open_turn_start=open_start,
        )

    def listed(self, idle_before: float | None, status: str | None) -> list[SessionRecord]:
        """Every session the whole ``ListSessions`` walk must return, in order."""
        chosen = [
            s
            for s in self.sessions.values()
            if (idle_before is None or s.updated < idle_before)
            and (status is None or s.status == status)
        ]
        chosen.sort(key=lambda s: (s.updated, s.id))
        return [s.record() for s in chosen]

    def delete(self, ids: list[str]) -> list[str]:
        gone: list[str] = []
        for sid in ids:
            if sid in self.sessions and sid not in gone:
                del self.sessions[sid]
                gone.append(sid)
        return gone

    def expire(self, idle_before: float, limit: int) -> list[str]:
        victims = [r.id for r in self.listed(idle_before, None)][:limit]
        return self.delete(victims)

    def copy(self, src: str, dst: str, replace: bool) -> Outcome:
        s = self.sessions.get(src)
        if s is None:
            return NOT_FOUND
        old = self.sessions.get(dst)
        if old is not None and not replace:
            return conflict("exists")
        new = attrs.evolve(
            s,
            id=dst,
            log=list(s.log),
            summary=list(s.summary),
            usage=list(s.usage),
            facts=dict(s.facts),
            version=1 if old is None else old.version + 1,
        )
        self.sessions[dst] = new
        return new.record()


def _counts(usage: Usage) -> list[int]:
    return [
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
    ]
