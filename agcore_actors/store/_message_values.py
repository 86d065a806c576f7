"""The values of the SessionStore's protocol: the replies, and the records inside them.

:class:`SessionRecord` and :class:`LogEntry` are what a backend stores and reads,
:class:`LoadedSession`, :class:`SessionPage`, :class:`SessionSnapshot` and
:class:`Deleted` what a request answers, :class:`Compaction` what a commit carries.
Frozen data only: no trio, no I/O. Both protocol modules
(:mod:`agcore_actors.store.messages` and its ownership part, ``_ownership_messages``)
build on them without importing each other; :mod:`agcore_actors.store.messages`
re-exports (and names, in reprs) every one: use them from there (``sm.SessionRecord``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..llm import Message, Usage

__all__ = [
    "Compaction",
    "Deleted",
    "LoadedSession",
    "LogEntry",
    "SessionPage",
    "SessionRecord",
    "SessionSnapshot",
    "SessionStatus",
]

#: ``idle``: no turn open; ``running``: a turn is open (begun, not committed);
#: ``interrupted``: the last turn was closed by ``RepairInterrupted``.
SessionStatus = Literal["idle", "running", "interrupted"]

# -- records and replies --------------------------------------------------------------


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One session's row: who, where it stands, what it cost, and its version.

    Immutable all through (a tuple of ids, ints, floats, strings, a frozen
    :class:`Usage`), so it can never be part of a reference cycle: the collector does
    not track it (16 bytes less per stored session, no collector work)."""

    id: str
    #: The agent that last ran (or was set by ``UpdateSession``); "" if none yet.
    agent: str = ""
    status: SessionStatus = "idle"
    #: The id of the open turn (status ``running``), else None.
    open_turn: str | None = None
    #: Turns begun so far.
    turns: int = 0
    #: Index of the last message of the raw log; -1 while it is empty.
    last_index: int = -1
    #: Messages ``[0, compacted_upto)`` are replaced by the summary in the history.
    compacted_upto: int = 0
    #: Ids of the calls of the last assistant message still unanswered (open turn only).
    pending_calls: tuple[str, ...] = ()
    #: Token usage summed over every turn, per kind.
    usage: Usage = Usage()
    #: Seconds on the store's clock (``created_at`` is kept by an update).
    created_at: float
    updated_at: float
    #: Bumped by every write; the compare-and-set token of the next write.
    version: int


class LogEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One message of the raw log, with where and when it was written."""

    index: int
    turn: str
    created_at: float
    message: Message


class Compaction(msgspec.Struct, frozen=True):
    """Replace messages ``[0, upto)`` in the history by ``summary``; the raw log stays.

    ``upto`` never goes back, must not point at a tool message (its call would be
    lost), and ``summary`` must be a transcript that leaves no call unanswered.
    """

    upto: int
    summary: list[Message]


class LoadedSession(msgspec.Struct, frozen=True, kw_only=True):
    """A session as loaded: its record, summary, a tail of its log and its facts.

    ``messages`` are log entries ``first_index ..= record.last_index``; they start at a
    non-tool message (a tail is extended back to its assistant message rather than
    split) and never before ``record.compacted_upto``. ``summary + messages`` is a
    transcript every provider accepts, except that an open turn (``interrupted``) may
    end with unanswered calls until ``RepairInterrupted`` closes it.
    """

    record: SessionRecord
    summary: list[Message]
    first_index: int
    messages: list[Message]
    facts: dict[str, str]
    #: The log index of the open turn's first message when it is in ``messages`` (None:
    #: no turn is open, or it starts before the tail).
    open_turn_start: int | None = None

    @property
    def interrupted(self) -> bool:
        """A turn was left open: begun and never committed (or still running)."""
        return self.record.open_turn is not None

    @property
    def history(self) -> list[Message]:
        """``summary + messages``: what the next model call should see."""
        return [*self.summary, *self.messages]


class SessionPage(msgspec.Struct, frozen=True):
    """One page of ``ListSessions``; ``cursor`` continues it (None: no more)."""

    sessions: list[SessionRecord]
    cursor: str | None = None


class SessionSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A whole session: record, summary, facts and the full raw log (export/import)."""

    record: SessionRecord
    summary: list[Message] = msgspec.field(default_factory=list)
    facts: dict[str, str] = msgspec.field(default_factory=dict)
    entries: list[LogEntry] = msgspec.field(default_factory=list)


class Deleted(msgspec.Struct, frozen=True):
    """The ids of the sessions that were there and are now gone."""

    ids: list[str]
