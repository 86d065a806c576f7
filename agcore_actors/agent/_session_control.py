"""The state of a :class:`~._session.Session`: the settings its host's sessions share,
what it holds only while turns run or wait, its turn lock, and its control messages —
cancel, approve, switch agent, facts, info — answered at once, also while a turn runs.
:class:`SessionControl` is the Session's base class; the turn loop is in ``_session``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Final

import attrs
import trio

from ..actor import Actor
from ..llm import Message as ChatMessage
from ..llm import SystemMessage, Usage
from ..tools import ApprovalDecision, ApprovalRequest
from . import messages as am
from ._config import Agent, AgentConfig
from ._errors import AgentConfigError
from ._hooks import TurnHooks
from ._store_port import TurnStore
from ._turn import Turn, TurnPorts

Emit = Callable[[am.TurnEvent], Awaitable[None]]


#: The facts of a session that has none (shared: an idle session holds no empty dict).
_NO_FACTS: Final[Mapping[str, str]] = MappingProxyType({})


@attrs.frozen
class SessionSettings:
    """What every session of a host shares (one object, not eight slots per session)."""

    agents: Mapping[str, Agent]
    #: The agent a new session starts with (a stored session keeps its own).
    default_agent: str
    ports: TurnPorts
    store: TurnStore
    config: AgentConfig
    max_queued: int = 4
    history_tail: int | None = 200
    commit_timeout: float = 30.0
    hooks: TurnHooks = attrs.field(factory=TurnHooks)


class _Busy:
    """What a session holds only while turns run or wait: the turn lock (FIFO), how
    many turns wait for it, and the running turn."""

    __slots__ = ("lock", "queued", "running")

    def __init__(self) -> None:
        self.lock = trio.StrictFIFOLock()
        self.queued = 0
        self.running: _Running | None = None


@attrs.define
class _Running:
    turn: Turn
    scope: trio.CancelScope
    emit: Emit
    approvals: dict[str, tuple[trio.Event, list[ApprovalDecision]]] = attrs.field(factory=dict)


SessionRequest = am.SessionMsg | ApprovalRequest


class SessionControl(Actor[SessionRequest]):
    """The state of a :class:`~._session.Session` (slots: many sessions stay live and
    idle at once, so no per-instance ``__dict__`` and no weakref slot), its turn lock
    and its control messages."""

    __slots__ = (
        "_busy",
        "_history_size",
        "_pending_facts",
        "_switch_notes",
        "agent_name",
        "facts",
        "history",
        "model_calls",
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
    model_calls: int
    version: int
    _busy: _Busy | None
    _pending_facts: tuple[dict[str, str], list[str]] | None
    _switch_notes: tuple[ChatMessage, ...]

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
        if not busy.lock.locked():
            self._busy = None
            if self._history_size >= 0 and self.history:
                self._history_size = len(self.history)
                self.history = self.usage = None

    def _running(self) -> _Running | None:
        """The running turn, if any."""
        return self._busy.running if self._busy is not None else None

    # -- control -------------------------------------------------------------------------

    def _on_cancel(self, msg: am.CancelTurn) -> bool:
        running = self._running()
        if running is None:
            return False
        if msg.mode == "immediate":
            running.scope.cancel()
        else:
            running.turn.stop_after_step = True
        return True

    async def _on_approval_request(self, request: ApprovalRequest) -> ApprovalDecision:
        running = self._running()
        if running is None:
            return ApprovalDecision(False, "no turn is running in this session")
        event = trio.Event()
        answer: list[ApprovalDecision] = []
        running.approvals[request.call_id] = (event, answer)
        try:
            await running.emit(
                am.ApprovalRequested(
                    call_id=request.call_id,
                    name=request.tool,
                    arguments=json.dumps(request.arguments, ensure_ascii=False),
                    timeout=self.settings.config.approval_timeout,
                )
            )
            with trio.move_on_after(self.settings.config.approval_timeout):
                await event.wait()
        finally:
            running.approvals.pop(request.call_id, None)
        return answer[0] if answer else ApprovalDecision(False, "approval timed out")

    def _on_approve(self, msg: am.Approve) -> bool:
        running = self._running()
        pending = running.approvals.get(msg.call_id) if running is not None else None
        if pending is None:
            return False
        event, answer = pending
        answer.append(ApprovalDecision(msg.allow, msg.reason or ("" if msg.allow else "denied")))
        event.set()
        return True

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
                self.version = await self.settings.store.set_facts(
                    self.session, self.version, dict(msg.set), list(msg.remove)
                )
            finally:
                self._release()
        removed = set(msg.remove)
        facts = {key: value for key, value in self.facts.items() if key not in removed}
        facts.update(msg.set)
        self.facts = facts or _NO_FACTS

    async def _on_info(self) -> am.SessionInfo:
        usage = self.usage
        if usage is None:  # idle: the stored figure (what the next turn would reload)
            usage = (await self.settings.store.load(self.session, 0)).usage
        running = self._running()
        return am.SessionInfo(
            session=self.session,
            agent=self.agent_name,
            running_turn=running.turn.turn_id if running is not None else None,
            queued_turns=self._busy.queued if self._busy is not None else 0,
            turns=self.turns,
            messages=self._history_size if self.history is None else len(self.history),
            usage=usage,
            facts=dict(self.facts),
        )
