"""What a Session needs from the session store, as one small interface, and its
implementation over the :class:`~agcore_actors.store.SessionStore` actor.

A turn is two writes: :meth:`TurnStore.begin` (or :meth:`TurnStore.begin_and_load`,
which also reads the transcript's tail back) makes the user's message durable and opens
the turn; :meth:`TurnStore.commit` adds everything else (assistant and tool
messages, usage, agent, facts) in one transaction and closes it. Both check the
session's version (compare-and-set), so a stale writer can never interleave turns.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from ..actor import ActorRef
from ..llm import Message as ChatMessage
from ..llm import Usage, UserMessage
from ..store import messages as sm

__all__ = ["OpenTurn", "SessionState", "StoreTurns", "TurnStore"]


class OpenTurn(msgspec.Struct, frozen=True, kw_only=True):
    """A turn the store holds open (suspended, or cut off by a crash), as a session that
    resumes it needs it: what it stored so far and the calls still unanswered."""

    turn: str
    #: Its stored messages, from the user's (notes of an agent switch go before it).
    messages: list[ChatMessage]
    #: The calls of its last assistant message that no stored result answers yet.
    pending: list[str] = msgspec.field(default_factory=list)


class SessionState(msgspec.Struct, frozen=True, kw_only=True):
    """A session as loaded: the tail of its transcript (valid for any provider), its
    facts, the agent that owns it, and the counters a session enforces limits with."""

    session: str
    version: int
    agent: str = ""
    history: list[ChatMessage] = msgspec.field(default_factory=list)
    facts: dict[str, str] = msgspec.field(default_factory=dict)
    usage: Usage = msgspec.field(default_factory=Usage)
    turns: int = 0
    #: A turn that was open when the session was loaded and has just been repaired.
    repaired_turn: str | None = None
    #: ``history`` opens with the summary of a compaction (not a suffix of the log).
    summarized: bool = False
    #: The turn left open, when loaded with ``keep_open`` (then not repaired).
    open_turn: OpenTurn | None = None


class TurnStore(Protocol):
    """The session store as a Session uses it (see the module docstring)."""

    async def load(self, session: str, tail: int | None, keep_open: bool = False) -> SessionState:
        """The session (a new, empty one at version 0 if it does not exist), with an
        interrupted turn repaired first; ``keep_open``: an open turn is not repaired but
        returned as ``open_turn`` (its messages not in ``history``)."""
        ...

    async def append(
        self, session: str, turn: str, version: int, messages: list[ChatMessage], usage: Usage
    ) -> int:
        """Checkpoint the open ``turn``: append ``messages`` (calls may stay open) and
        ``usage``, durably; the new version."""
        ...

    async def begin(
        self, session: str, turn: str, version: int, messages: list[ChatMessage], agent: str
    ) -> int:
        """Open ``turn`` with ``messages``; the new version."""
        ...

    async def begin_and_load(
        self,
        session: str,
        turn: str,
        version: int,
        messages: list[ChatMessage],
        agent: str,
        tail: int | None,
    ) -> SessionState:
        """Open ``turn`` with ``messages``, in the same write reading the session back:
        its new version and usage, and the last ``tail`` messages before ``messages``."""
        ...

    async def commit(
        self,
        session: str,
        turn: str,
        version: int,
        *,
        messages: list[ChatMessage],
        usage: Usage,
        agent: str,
        status: str,
        facts_set: dict[str, str],
        facts_removed: list[str],
    ) -> int:
        """Close ``turn`` with ``messages``, usage and facts in one transaction; the new
        version."""
        ...

    async def set_facts(
        self, session: str, version: int, facts_set: dict[str, str], facts_removed: list[str]
    ) -> int:
        """Change facts outside a turn; the new version."""
        ...

    async def delete(self, session: str) -> bool:
        """Delete the session with everything stored for it; False if there was none."""
        ...


class StoreTurns:
    """:class:`TurnStore` over a SessionStore actor (``store``: its ref).

    Every write carries :meth:`fence` of its session (None here: unfenced; a clustered
    host's sessions write through :class:`~._store_fenced.FencedTurns`, which fences
    them with its lease) and is sent by :meth:`_ask`."""

    __slots__ = ("store",)

    def __init__(self, store: ActorRef[Any]) -> None:
        self.store = store

    def fence(self, session: str) -> int | None:
        """The lease token a write of ``session`` carries (None: unfenced)."""
        return None

    async def _ask(self, request: Any) -> Any:
        """Send a write."""
        return await self.store.ask(request)

    async def load(self, session: str, tail: int | None, keep_open: bool = False) -> SessionState:
        fence = self.fence(session)
        loaded: sm.LoadedSession = await self.store.ask(
            sm.LoadSession(session, tail, missing_ok=True)
        )
        repaired = None
        if loaded.interrupted and keep_open:
            if loaded.open_turn_start is None:  # the tail cut the turn: all of it
                loaded = await self.store.ask(sm.LoadSession(session, None))
            return _open_state(loaded)
        if loaded.interrupted:
            record = loaded.record
            assert record.open_turn is not None
            repaired = record.open_turn
            await self._ask(
                sm.RepairInterrupted(session, record.open_turn, record.version, fence=fence)
            )
            loaded = await self.store.ask(sm.LoadSession(session, tail))
        return _state(loaded, loaded.messages, repaired)

    async def begin(
        self, session: str, turn: str, version: int, messages: list[ChatMessage], agent: str
    ) -> int:
        request = sm.BeginTurn(
            session=session,
            turn=turn,
            expected_version=version,
            messages=messages,
            agent=agent,
            fence=self.fence(session),
        )
        record: sm.SessionRecord = await self._ask(request)
        return record.version

    async def begin_and_load(
        self,
        session: str,
        turn: str,
        version: int,
        messages: list[ChatMessage],
        agent: str,
        tail: int | None,
    ) -> SessionState:
        request = sm.BeginTurnAndLoad(
            session=session,
            turn=turn,
            expected_version=version,
            messages=messages,
            agent=agent,
            tail=tail,
            fence=self.fence(session),
        )
        loaded: sm.LoadedSession = await self._ask(request)
        return _state(loaded, loaded.messages[: len(loaded.messages) - len(messages)])

    async def commit(
        self,
        session: str,
        turn: str,
        version: int,
        *,
        messages: list[ChatMessage],
        usage: Usage,
        agent: str,
        status: str,
        facts_set: dict[str, str],
        facts_removed: list[str],
    ) -> int:
        request = sm.CommitTurn(
            session=session,
            turn=turn,
            expected_version=version,
            messages=messages,
            usage_delta=usage,
            agent=agent,
            facts_set=facts_set,
            facts_removed=facts_removed,
            fence=self.fence(session),
        )
        record: sm.SessionRecord = await self._ask(request)
        return record.version

    async def append(
        self, session: str, turn: str, version: int, messages: list[ChatMessage], usage: Usage
    ) -> int:
        request = sm.AppendTurn(
            session=session,
            turn=turn,
            expected_version=version,
            messages=messages,
            usage_delta=usage,
            fence=self.fence(session),
        )
        record: sm.SessionRecord = await self._ask(request)
        return record.version

    async def set_facts(
        self, session: str, version: int, facts_set: dict[str, str], facts_removed: list[str]
    ) -> int:
        request = sm.UpdateSession(
            session=session,
            expected_version=version,
            facts_set=facts_set,
            facts_removed=facts_removed,
            fence=self.fence(session),
        )
        record: sm.SessionRecord = await self._ask(request)
        return record.version

    async def delete(self, session: str) -> bool:
        request = sm.DeleteSessions([session], fence=self.fence(session))
        deleted: sm.Deleted = await self._ask(request)
        return session in deleted.ids


def _state(
    loaded: sm.LoadedSession, messages: list[ChatMessage], repaired: str | None = None
) -> SessionState:
    """``loaded`` as a Session keeps it, its history the summary and then ``messages``."""
    record = loaded.record
    return SessionState(
        session=record.id,
        version=record.version,
        agent=record.agent,
        history=[*loaded.summary, *messages],
        facts=dict(loaded.facts),
        usage=record.usage,
        turns=record.turns,
        repaired_turn=repaired,
        summarized=bool(loaded.summary),
    )


def _open_state(loaded: sm.LoadedSession) -> SessionState:
    """``loaded`` with its open turn kept apart (not repaired)."""
    record = loaded.record
    assert record.open_turn is not None and loaded.open_turn_start is not None
    split = loaded.open_turn_start - loaded.first_index
    before, opened = loaded.messages[:split], loaded.messages[split:]
    # Notes of an agent switch are stored before the user's message: history, not turn.
    user = next((i for i, m in enumerate(opened) if isinstance(m, UserMessage)), 0)
    state = _state(loaded, [*before, *opened[:user]])
    return msgspec.structs.replace(
        state,
        open_turn=OpenTurn(
            turn=record.open_turn, messages=opened[user:], pending=list(record.pending_calls)
        ),
    )
