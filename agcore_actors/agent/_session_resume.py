"""Suspended and resumed turns of a :class:`~._session.Session`: storing a turn's steps
as they complete, suspending a turn whose tool call waits for an answer, answering it
(from this process or another, after restarts), resuming it, and cancelling it; an MCP
server's question during a tool call suspends a turn the same way
(``elicitations="suspend"``).

Guarantees:

- a durable turn's steps are stored as they complete (:meth:`SessionResume._append`,
  shielded from cancellation and bounded by ``commit_timeout``, like a commit): a crash
  loses no completed tool call, and the turn left open is resumed from there — the
  calls with a stored result never run again;
- a suspended turn is stored before :class:`~.messages.TurnSuspended` is sent: its
  steps (the open turn) and then its :class:`~._suspend.Suspension` (a reserved fact);
  a crash between the two leaves an open turn without the fact, which resumes as any
  interrupted turn (its approvals are asked again and it suspends again);
- answers are judged by :func:`~._suspend.judge` holding the turn lock, so two answers
  to one call never both count: the first is stored (a facts write) before its reply,
  the second is a ``duplicate``; an answer for a turn that no longer waits raises
  :class:`~._errors.StaleAnswer` and changes nothing;
- the commit that ends a suspended turn (resumed to its end, or cancelled) removes its
  suspension and keeps its answers, in the same transaction.

Cancellation: cancelling the asker of an ``AnswerTurn`` that resumed the turn cancels
that turn, which commits first (the answer stays stored); the stores of a suspension
and of a cancellation are shielded, bounded by ``commit_timeout``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from ..actor import AskTimeout
from ..llm import Message as ChatMessage
from ..llm import Usage, UserMessage
from ..tools import RunContext
from . import messages as am
from ._child import drop_events
from ._config import Agent, PromptContext
from ._errors import SessionSuspended, StaleAnswer
from ._prompt import system_prompt
from ._session_asks import SessionAsks
from ._session_control import Emit, _Running
from ._store_port import OpenTurn
from ._suspend import (
    ANSWERED_FACT,
    SUSPENDED_FACT,
    Answer,
    Suspension,
    closed_after,
    closed_of,
    elicitation_key,
    elicitation_reply,
    encode,
    judge,
    pending_calls,
    ready,
    suspension_of,
    with_answer,
)
from ._transcript import synthetic_results
from ._turn import Turn
from ._turn_setup import run_context, session_spend, spend_fact, visible_facts


def closing_facts(facts: Mapping[str, str], turn: str, status: am.TurnStatus) -> dict[str, str]:
    """The facts the commit of ``turn`` with ``status`` sets when ``turn`` is the
    suspended one (its answers kept as closed; the caller removes the suspension)."""
    suspension = suspension_of(facts)
    if suspension is None or suspension.turn != turn:
        return {}
    closed = closed_of(facts)
    if status == "cancelled":
        return {ANSWERED_FACT: encode(closed_after(closed, suspension, "cancelled"))}
    return {ANSWERED_FACT: encode(closed_after(closed, suspension, "finished"))}


def _deferred(suspension: Suspension, call_id: str) -> bool:
    """Whether ``call_id`` is awaited as a call its tool deferred."""
    return any(c.call_id == call_id and c.kind == "deferred" for c in suspension.awaiting)


class SessionResume(SessionAsks):
    """The suspend/resume part of a :class:`~._session.Session` (see the module doc)."""

    __slots__ = ()

    def _make_turn(
        self,
        turn_id: str,
        agent: Agent,
        history: list[ChatMessage],
        context: PromptContext,
        emit: Emit,
        overrides: am.ModelOverrides | None,
        scope: trio.CancelScope,
        run: RunContext[Any],
    ) -> Turn:
        """A turn of ``agent`` on ``history`` (durable when the config says so)."""
        durable = self.settings.config.durable
        return Turn(
            session=self.session,
            turn_id=turn_id,
            agent=agent,
            config=self.settings.config,
            ports=self.settings.ports,
            history=history,
            system_prompt=system_prompt(agent, context),
            emit=emit,
            subagents={
                name: self.settings.agents[name]
                for name in agent.subagents
                if name in self.settings.agents
            },
            run_child=self._run_child,
            # Nobody reads the events of a RunTurn: plain model calls, no stream to parse.
            streamed=emit is not drop_events,
            settings=agent.model.with_overrides(overrides),
            session_spend=session_spend(self.usage, self.facts),
            run_context=run,
            append=functools.partial(self._append, turn_id) if durable else None,
        )

    if TYPE_CHECKING:  # Session's (declared for the checker, not defined here)

        async def _run_child(
            self, agent: Agent, call_id: str, task: str
        ) -> tuple[am.ToolCallStatus, str, Usage, float]: ...

        async def _drive(
            self,
            turn: Turn,
            scope: trio.CancelScope,
            context: PromptContext,
            emit: Emit,
            *,
            user: UserMessage | str = "",
            pending: list[str] | None = None,
        ) -> am.TurnResult: ...

    # -- storing steps -------------------------------------------------------------------

    async def _append(self, turn_id: str, messages: list[ChatMessage], usage: Usage) -> None:
        """Store a durable turn's new steps in its open turn (see the module doc)."""
        timeout = self.settings.commit_timeout
        try:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + timeout) as scope:
                self.version = await self._store.append(
                    self.session, turn_id, self.version, messages, usage
                )
        except BaseException:
            self._unsure = True
            raise
        if scope.cancelled_caught:
            self._unsure = True
            raise AskTimeout(f"store (steps of {self.session!r})", timeout)

    async def _store_suspended(self, turn: Turn) -> am.TurnResult:
        """Store ``turn`` as suspended: its steps, then its suspension (with the facts set
        while it ran and its spend); the session takes no turn until it is answered."""
        facts_set, facts_removed = self._pending_facts or ({}, [])
        self._pending_facts = None
        spent = spend_fact(self.facts, turn.cost)
        suspension = Suspension(
            turn=turn.turn_id, awaiting=list(turn.suspended.values()), answers=dict(turn.answers)
        )
        written = {**facts_set, **spent, SUSPENDED_FACT: encode(suspension)}
        timeout = self.settings.commit_timeout
        try:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + timeout) as scope:
                await turn.save()
                self.version = await self._store.set_facts(
                    self.session, self.version, written, facts_removed
                )
            if scope.cancelled_caught:
                raise AskTimeout(f"store (suspension of {self.session!r})", timeout)
        except BaseException:
            self._unsure = True
            self._keep_facts(facts_set, facts_removed)
            raise
        facts = {k: v for k, v in self.facts.items() if k not in facts_removed}
        facts.update(written)
        self.facts = facts
        self._open = OpenTurn(
            turn=turn.turn_id, messages=list(turn.messages), pending=pending_calls(turn.messages)
        )
        usage = self.usage
        assert usage is not None  # loaded with the turn
        self.usage = usage + turn.usage
        return turn.result("suspended", None)

    # -- resuming --------------------------------------------------------------------------

    def _waiting(self) -> Suspension | None:
        """The suspension of the open turn while it still waits for an answer."""
        opened = self._open
        suspension = suspension_of(self.facts)
        if opened is None or suspension is None or suspension.turn != opened.turn:
            return None
        return None if ready(suspension) else suspension

    def _refuse_while_waiting(self) -> None:
        waiting = self._waiting()
        if waiting is not None:
            calls = [c.call_id for c in waiting.awaiting if c.call_id not in waiting.answers]
            raise SessionSuspended(self.session, waiting.turn, calls)

    async def _resume_first(self) -> None:
        """Before a new turn (holding the lock): resume the open turn if it can go on
        (its events dropped); :class:`SessionSuspended` if it waits for answers."""
        self._refuse_while_waiting()
        await self._resume_open(drop_events)
        self._refuse_while_waiting()
        if self._open is not None:  # suspended again
            raise SessionSuspended(self.session, self._open.turn, self._open.pending)

    async def _resume_open(self, emit: Emit) -> am.TurnResult:
        """Run the open turn from its stored steps to its end (holding the lock)."""
        state = await self._store.load(self.session, self.settings.history_tail, True)
        self._adopt(state)
        self._open = opened = state.open_turn
        if opened is None:
            raise StaleAnswer("", "", "no turn is open")
        suspension = suspension_of(self.facts)
        answers: dict[str, Answer] = {}
        if suspension is not None and suspension.turn == opened.turn:
            answers = suspension.answers
        agent = self.settings.agents.get(state.agent) or self.settings.agents[self.agent_name]
        context = PromptContext(
            session=self.session, agent=agent.name, turn=self.turns, facts=visible_facts(self.facts)
        )
        scope = trio.CancelScope()
        run = run_context(self.session, opened.turn, agent, self.settings.deps, scope)
        history = self.history
        assert history is not None  # just loaded
        turn = self._make_turn(opened.turn, agent, list(history), context, emit, None, scope, run)
        turn.messages = list(opened.messages)
        turn.stored = len(turn.messages)
        turn.answers = answers
        turn.resumed = True
        return await self._drive(turn, scope, context, emit, pending=opened.pending)

    # -- elicitations ----------------------------------------------------------------------

    async def _suspend_elicitation(self, running: _Running, msg: am.Elicit) -> am.ElicitationAnswer:
        """An elicitation of a turn that suspends for them: the stored answer of a
        resumed turn's call, else the question is held (the turn suspends after this
        round, the server is told ``cancel`` and the call's result dropped)."""
        turn = running.turn
        asked = turn.elicited[msg.call_id] = turn.elicited.get(msg.call_id, 0) + 1
        key = elicitation_key(msg.call_id, asked)
        given = turn.answers.get(key)
        if given is not None:
            return elicitation_reply(given)
        name, arguments = turn.call_of(msg.call_id)
        schema = json.dumps(msg.schema, ensure_ascii=False)
        turn.suspended[key] = am.AwaitingCall(
            call_id=key,
            name=name,
            arguments=arguments,
            kind="elicitation",
            tool_call=msg.call_id,
            server=msg.server,
            message=msg.message,
            schema=schema,
        )
        await running.emit(
            am.ElicitationRequested(
                elicitation_id=key,
                server=msg.server,
                message=msg.message,
                schema=schema,
                timeout=0.0,
                suspends=True,
                call_id=msg.call_id,
            )
        )
        return am.ElicitationAnswer(action="cancel")

    # -- requests --------------------------------------------------------------------------

    async def _on_answer(self, msg: am.AnswerTurn) -> am.AnswerResult:
        answer = Answer(
            allow=msg.allow,
            reason=msg.reason,
            result=msg.result,
            action=msg.action,
            content=msg.content if msg.action in (None, "accept") else None,
        )
        await self._acquire()
        try:
            if self._unsure:
                await self._resync()
            suspension = suspension_of(self.facts)
            verdict, first = judge(suspension, closed_of(self.facts), msg.turn, msg.call_id)
            if verdict == "duplicate":
                assert first is not None
                return am.AnswerResult(
                    turn=msg.turn, call_id=msg.call_id, status="duplicate", allow=first.allow
                )
            assert suspension is not None
            if _deferred(suspension, msg.call_id) and not msg.allow and msg.result is None:
                # A deferred call denied: its result says so (it does not run again).
                why = msg.reason or "denied"
                answer = Answer(
                    allow=False, reason=why, result=f"Error: the call was denied: {why}"
                )
            suspension = with_answer(suspension, msg.call_id, answer)
            written = {SUSPENDED_FACT: encode(suspension)}
            try:
                self.version = await self._store.set_facts(self.session, self.version, written, [])
            except BaseException:
                self._unsure = True  # stored or not: the reload says
                raise
            self.facts = {**self.facts, **written}
            recorded = am.AnswerResult(
                turn=msg.turn, call_id=msg.call_id, status="recorded", allow=msg.allow
            )
            if not msg.resume or not ready(suspension):
                return recorded
            result = await self._resume_open(drop_events)
            return am.AnswerResult(
                turn=msg.turn, call_id=msg.call_id, status="resumed", allow=msg.allow, result=result
            )
        finally:
            self._release()

    async def _on_resume(self) -> am.TurnResult:
        await self._acquire()
        try:
            if self._unsure:
                await self._resync()
            self._refuse_while_waiting()
            return await self._resume_open(drop_events)
        finally:
            self._release()

    async def _on_cancel(self, msg: am.CancelTurn) -> bool:
        running = self._running()
        if running is not None:
            if msg.mode == "immediate":
                running.scope.cancel()
            else:
                running.turn.stop_after_step = True
            return True
        if self._open is None:
            return False
        await self._acquire()
        try:
            if self._open is None or self._running() is not None:
                return False  # resumed or ended meanwhile
            await self._cancel_open(self._open)
            return True
        finally:
            self._release()

    async def _cancel_open(self, opened: OpenTurn) -> None:
        """Commit the open turn ``cancelled`` (its waiting calls answered so), its
        suspension closed in the same transaction."""
        closing = closing_facts(self.facts, opened.turn, "cancelled")
        messages: list[ChatMessage] = [
            *synthetic_results(opened.messages, "cancelled", "the turn was cancelled")
        ]
        timeout = self.settings.commit_timeout
        try:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + timeout) as scope:
                self.version = await self._store.commit(
                    self.session,
                    opened.turn,
                    self.version,
                    messages=messages,
                    usage=Usage(),
                    agent=self.agent_name,
                    status="cancelled",
                    facts_set=closing,
                    facts_removed=[SUSPENDED_FACT] if closing else [],
                )
            if scope.cancelled_caught:
                raise AskTimeout(f"store (cancel of {self.session!r})", timeout)
        except BaseException:
            self._unsure = True
            raise
        # The tail and counters are the store's now: reloaded before the next write.
        self._unsure = True
        self._open = None
        facts = {**self.facts, **closing}
        facts.pop(SUSPENDED_FACT, None)
        self.facts = facts
