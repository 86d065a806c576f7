"""The state of a :class:`~._session.Session`: the settings its host's sessions share,
what it holds only while turns run or wait, its turn lock, its writes of a turn (begin,
commit) and how it gets back in step with the store after one failed, and its control
messages — switch agent, facts, info — answered at once, also while a turn runs.
:class:`SessionControl` is the Session's base class; what a running turn asks
(approvals, elicitations, progress) is in ``_session_asks``, suspend and resume in
``_session_resume``, the turn loop in ``_session``, the state's types in
``_session_state``.

In step with the store: a begin, commit or facts write that fails or is cut short may
or may not have been applied, so the session marks itself unsure (``_unsure``) and
reloads before its next write (:meth:`SessionControl._resync`): the load repairs a turn
left open, and facts acknowledged with a failed commit are written then. A begin cut
short by a cancellation reloads at once, shielded and within ``commit_timeout``, so the
cancelled turn is closed before the cancellation completes. Each step of a reload gives
the same result when repeated, so a reload that fails or is cut short leaves the session
unsure and the next one starts over.

Info: an idle session holds no usage figure, so ``GetSessionInfo`` reads the stored one,
holding the turn lock for that one read (a load closes an open turn as interrupted, so
it must never run beside a begin); asked while a turn is beginning, it waits for that
begin (one store round trip), never for the turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import trio

from .._errors import AgcoreError
from ..actor import Actor
from ..llm import Message as ChatMessage
from ..llm import SystemMessage, Usage
from . import messages as am
from ._child import commit_turn
from ._errors import AgentConfigError, SessionSuspended

# The session state types, re-exported for _session, _session_resume and _bundle.
from ._session_state import _NO_FACTS as _NO_FACTS
from ._session_state import Emit as Emit
from ._session_state import SessionRequest as SessionRequest
from ._session_state import SessionSettings as SessionSettings
from ._session_state import _Busy as _Busy
from ._session_state import _Running as _Running
from ._store_port import OpenTurn, SessionState, TurnStore
from ._suspend import suspension_of
from ._turn import Turn
from ._turn_setup import check_fact_keys, visible_facts


class SessionControl(Actor[SessionRequest]):
    """The state of a :class:`~._session.Session` (slots: many sessions stay live and
    idle at once, so no per-instance ``__dict__`` and no weakref slot), its turn lock
    and its control messages."""

    __slots__ = (
        "_busy",
        "_history_size",
        "_open",
        "_pending_facts",
        "_store",
        "_switch_notes",
        "_unsure",
        "agent_name",
        "facts",
        "history",
        "session",
        "settings",
        "turns",
        "usage",
        "version",
    )

    session: str
    settings: SessionSettings
    agent_name: str
    facts: Mapping[str, str]
    history: list[ChatMessage] | None
    _history_size: int
    usage: Usage | None
    turns: int
    version: int
    _busy: _Busy | None
    _pending_facts: tuple[dict[str, str], list[str]] | None
    #: The store as this session writes it: the settings' one, or a view of it under
    #: this host's lease on the session (a clustered host, see ``_store_fenced``).
    _store: TurnStore
    _switch_notes: tuple[ChatMessage, ...]
    _unsure: bool
    #: The turn the store holds open (suspended, or left by a crash) when the agent's
    #: config keeps such turns to resume them (``durable``), else always None.
    _open: OpenTurn | None

    def _busy_now(self) -> _Busy:
        """The busy state, made if the session was idle."""
        busy = self._busy
        if busy is None:
            busy = self._busy = _Busy()
        return busy

    async def _acquire(self) -> None:
        """Take the turn lock; ends holding it or raises."""
        await self._busy_now().lock.acquire()

    def _release(self) -> None:
        """Give the turn lock to the next waiter, or drop it when nobody waits (the
        session is idle: its decoded tail and usage go too, see "Memory" in _session)."""
        busy = self._busy
        assert busy is not None
        busy.lock.release()  # hands it straight to the next waiter, if any
        busy.wake()
        if not busy.lock.locked():
            self._busy = None
            if self._history_size >= 0 and self.history:
                self._history_size = len(self.history)
                self.history = self.usage = None

    # -- staying in step with the store --------------------------------------------------

    async def _load(self, tail: int | None) -> SessionState:
        """The stored session; a turn left open is kept (not repaired) when the config
        resumes such turns."""
        if self.settings.config.durable:
            return await self._store.load(self.session, tail, True)
        return await self._store.load(self.session, tail)

    def _adopt(self, state: SessionState) -> None:
        """Take the stored session as it is (on start, and when resynchronising)."""
        self.version = state.version
        self.history = list(state.history)
        self._history_size = -1 if state.summarized else 0
        self.facts = dict(state.facts) if state.facts else _NO_FACTS
        self.usage = state.usage
        self.turns = state.turns

    def _keep_facts(self, facts_set: dict[str, str], facts_removed: list[str]) -> None:
        """Put facts back in front of those pending (their write failed): the store gets
        them, in order, before anything newer."""
        pending = self._pending_facts
        if pending is not None:
            newer_set, newer_removed = pending
            facts_set = {k: v for k, v in facts_set.items() if k not in newer_removed}
            facts_set.update(newer_set)
            facts_removed = [*facts_removed, *newer_removed]
        if facts_set or facts_removed:
            self._pending_facts = (facts_set, facts_removed)

    async def _resync(self) -> None:
        """Reload the session from the store, the truth after a write whose outcome the
        session does not know (cut short, refused, timed out: ``_unsure``): an open turn
        is repaired (closed as interrupted, every call answered) by the load, and facts
        acknowledged but not stored are written. Called holding the turn lock (or from
        the turn that holds it); raises the store's error, and the session stays unsure:
        a reload and a facts write give the same result when repeated."""
        store = self._store
        state = await self._load(self.settings.history_tail)
        self._open = state.open_turn
        version = state.version
        pending = self._pending_facts
        if pending is not None:
            version = await store.set_facts(self.session, version, *pending)
            self._pending_facts = None
        self._adopt(state)
        self.version = version
        if pending is not None:
            facts = {k: v for k, v in self.facts.items() if k not in pending[1]}
            facts.update(pending[0])
            self.facts = facts or _NO_FACTS
        self._unsure = False

    async def _begin(
        self, turn_id: str, opening: list[ChatMessage], agent: str
    ) -> list[ChatMessage]:
        """Open the turn in the store; the tail the prompt starts with (reloaded in the
        same write if it was dropped while idle). Called holding the turn lock.

        A begin that fails or is cut short may have been applied: the session is then
        unsure; cut short, it reloads (repairing the turn) before the cancellation
        completes, else its next turn reloads first."""
        if self._unsure:
            await self._resync()
            if self._busy is not None:
                self._busy.wake()
            if self._open is not None:  # found open: answered or resumed first
                raise SessionSuspended(self.session, self._open.turn, self._open.pending)
        store = self._store
        history = self.history
        try:
            if history is None:
                state = await store.begin_and_load(
                    self.session, turn_id, self.version, opening, agent, self._history_size
                )
                self.version, self.usage = state.version, state.usage
                self.history = history = state.history
                if state.summarized:
                    self._history_size = -1  # keep it from now on (see Session._setup)
                if self._busy is not None:
                    self._busy.wake()
            else:
                self.version = await store.begin(
                    self.session, turn_id, self.version, opening, agent
                )
        except BaseException as exc:
            self._unsure = True
            if isinstance(exc, trio.Cancelled):
                await self._settle()
            raise
        return history

    async def _store_commit(
        self,
        turn: Turn,
        version: int,
        status: am.TurnStatus,
        facts_set: dict[str, str],
        facts_removed: list[str],
    ) -> int:
        """Close ``turn``'s open calls and commit it, shielded from cancellation."""
        return await commit_turn(
            self._store,
            self.settings.commit_timeout,
            turn,
            version,
            status,
            facts_set,
            facts_removed,
        )

    async def _settle(self) -> None:
        """:meth:`_resync` now, shielded from the cancellation that cut a write short and
        bounded by ``commit_timeout``; if the store cannot answer, the session stays
        unsure and its next turn tries again."""
        deadline = trio.current_time() + self.settings.commit_timeout
        with trio.CancelScope(shield=True, deadline=deadline), contextlib.suppress(AgcoreError):
            await self._resync()

    def _running(self) -> _Running | None:
        """The running turn, if any."""
        return self._busy.running if self._busy is not None else None

    # -- control -------------------------------------------------------------------------

    def _on_switch(self, msg: am.SwitchAgent) -> str:
        if msg.agent not in self.settings.agents:
            raise AgentConfigError(f"unknown agent {msg.agent!r}")
        old, self.agent_name = self.agent_name, msg.agent
        if old != msg.agent:
            # The history stays; a note in it tells the model (and readers) who answers now.
            note = f"[The conversation is now handled by agent {msg.agent!r} (was {old!r}).]"
            self._switch_notes = (*self._switch_notes, SystemMessage(note))
        return old

    async def _on_set_facts(self, msg: am.SetFacts) -> None:
        check_fact_keys([*msg.set, *msg.remove])
        if self._running() is not None:
            # A turn runs (it has begun, so it commits whatever happens): the facts are
            # committed with it, in one transaction. Otherwise they are written now, after
            # whatever holds the lock (a facts write, turns waiting): never left pending
            # with no commit to come.
            if self._pending_facts is None:
                self._pending_facts = ({}, [])
            pending_set, pending_removed = self._pending_facts
            for key in msg.remove:
                pending_set.pop(key, None)
                pending_removed.append(key)
            pending_set.update(msg.set)
        else:
            await self._acquire()
            try:
                if self._unsure:
                    await self._resync()
                try:
                    self.version = await self._store.set_facts(
                        self.session, self.version, dict(msg.set), list(msg.remove)
                    )
                except BaseException:
                    self._unsure = True  # refused or cut short: applied or not, reload
                    raise
            finally:
                self._release()
        removed = set(msg.remove)
        facts = {key: value for key, value in self.facts.items() if key not in removed}
        facts.update(msg.set)
        self.facts = facts or _NO_FACTS

    async def _on_info(self) -> am.SessionInfo:
        usage = self.usage
        while usage is None:  # idle: the stored figure (what the next turn would reload)
            busy = self._busy
            if busy is None:
                # Read holding the lock: a turn beginning meanwhile would be open in the
                # store, and the load would close it as interrupted.
                await self._acquire()
                try:
                    usage = self.usage or (await self._load(0)).usage
                finally:
                    self._release()
            else:
                # The lock's holder (a turn beginning, a facts write) has not loaded the
                # session: wait until it has, or has let go (a read takes the lock then).
                if busy.loaded is None:
                    busy.loaded = trio.Event()
                await busy.loaded.wait()
                usage = self.usage
        running = self._running()
        opened = self._open
        suspension = suspension_of(self.facts) if opened is not None else None
        awaiting: list[am.AwaitingCall] = []
        if suspension is not None and opened is not None and suspension.turn == opened.turn:
            awaiting = [c for c in suspension.awaiting if c.call_id not in suspension.answers]
        return am.SessionInfo(
            session=self.session,
            agent=self.agent_name,
            running_turn=running.turn.turn_id if running is not None else None,
            queued_turns=self._busy.queued if self._busy is not None else 0,
            turns=self.turns,
            messages=self._history_size if self.history is None else len(self.history),
            usage=usage,
            facts=visible_facts(self.facts),
            suspended_turn=opened.turn if opened is not None else None,
            awaiting=awaiting,
        )
