"""The Session actor: one conversation, one turn at a time, every turn committed.

Semantics:
    A session loads its state from the store when it starts (an interrupted turn is
    repaired first), then serves :mod:`agcore_actors.agent.messages`. Turns run one at a
    time in arrival order; up to ``max_queued`` more wait behind the running one, and one
    more is refused with :class:`SessionBusy` without changing anything. Control
    messages (cancel, approve, switch agent, info) are answered at once, also while a
    turn runs, and each is handled side by side with the others (also those that
    arrived while the session was dormant). Facts set while a turn runs are stored with
    its commit; otherwise they are stored before ``SetFacts`` is answered (after the
    turns ahead of them).

Cancellation:
    ``CancelTurn("immediate")``, the turn's deadline, the reader leaving a
    ``SubmitTurn`` stream and the asker of ``RunTurn`` being cancelled all cancel the
    turn's whole task tree: the model request is closed, the tool batch cancelled. In
    every case the turn is then committed — shielded from the cancellation, bounded by
    ``commit_timeout`` — with every tool call answered (synthetic ``cancelled`` results
    where needed) and the usage it had, before the cancellation completes.
    ``CancelTurn("after_turn")`` lets the current model call or tool batch finish and
    stops before the next one.

Memory:
    Between turns a live session holds no task, nursery or worker pool (it is dormant,
    see :mod:`agcore_actors.actor._dormant`) and no decoded transcript: only its counters,
    facts and how many messages its tail had. The next turn reloads exactly that tail,
    with the stored usage, from the store (the same messages, so the prompt is what it
    would have been) before anything else; if the store cannot answer, the turn fails
    as a store error would at its start, and nothing is written.

Store faults:
    A begin or commit that fails or is cut short (cancelled in flight, full disk, busy
    or lost store, the commit's deadline) may or may not be applied: the session is then
    *unsure*. A begin cut short reloads at once (shielded, within ``commit_timeout``),
    which closes the turn if it was opened; otherwise the next turn (or facts write)
    reloads first, repairing an open turn: once the store takes writes again, the next
    turn of every session completes. The happy path pays a flag test (``_session_control``).

Errors:
    A typed error of the layers below (LLM, tools, store conflicts, limits) fails the
    turn: it is committed as ``failed`` and reported in :class:`TurnFailed` (or raised
    to the asker of ``RunTurn``); the session goes on. A typed error of the store that
    refuses the turn's begin or commit ends a ``SubmitTurn`` stream with
    :class:`TurnFailed` and is raised to the asker of ``RunTurn``; the session goes on
    (unsure, see above). Anything else is a bug: the turn is committed as far as it got,
    then the actor crashes and its supervisor restarts it from the store.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, assert_never

import trio

from .._errors import AgcoreError
from ..llm import Message as ChatMessage
from ..llm import Usage, UserMessage, content_text
from ..tools import ApprovalRequest
from ..tools._deps import providing
from . import messages as am
from ._child import run_child_session
from ._config import Agent, AgentConfig, PromptContext
from ._errors import AgentConfigError, TurnTimeout
from ._hooks import TurnHooks
from ._session_control import (
    _NO_FACTS,
    Emit,
    SessionRequest,
    SessionSettings,
    _Busy,
    _Running,
)
from ._session_queue import run_turn, submit_turn
from ._session_resume import SessionResume, closing_facts
from ._store_port import OpenTurn, TurnStore
from ._suspend import SUSPENDED_FACT
from ._transcript import valid_tail
from ._turn import Turn, TurnPorts
from ._turn_setup import (
    failed_result,
    final_event,
    refusal,
    refused_result,
    run_context,
    spend_fact,
    visible_facts,
)

_log = logging.getLogger("agcore_actors.agent")


class Session(SessionResume):
    """One conversation; see the module docstring. Build it with :func:`session_spec`."""

    # One running turn, its queue, and room for control messages beside them.
    max_concurrency: ClassVar[int] = 16
    # A host keeps thousands idle: an idle session holds no cancel scope.
    idle_scope: ClassVar[bool] = False
    # Idle for 50 ms, a live session gives up its task, nursery and worker pool (about
    # half of its memory); the next message starts one again (about 20 µs). Turns that
    # come closer together (a script, an agent loop, a burst) pay no wake-up. Longer
    # would keep more sessions awake at once, and their freed memory fragments the heap.
    hibernate: ClassVar[bool] = True
    hibernate_after: ClassVar[float] = 0.05
    expected_errors = (AgcoreError,)

    __slots__ = ()  # the state's slots are SessionControl's

    def __init__(
        self,
        session: str,
        *,
        agents: Mapping[str, Agent],
        default_agent: str,
        ports: TurnPorts,
        store: TurnStore,
        config: AgentConfig,
        max_queued: int = 4,
        history_tail: int | None = 200,
        commit_timeout: float = 30.0,
        hooks: TurnHooks | None = None,
    ) -> None:
        settings = SessionSettings(
            # A read-only view is shared as is (the bundle's: no copy per session).
            agents=agents
            if isinstance(agents, MappingProxyType)
            else MappingProxyType(dict(agents)),
            default_agent=default_agent,
            ports=ports,
            store=store,
            config=config,
            max_queued=max_queued,
            history_tail=history_tail,
            commit_timeout=commit_timeout,
            hooks=hooks or TurnHooks(),
        )
        self._setup(session, settings)

    @classmethod
    def sharing(
        cls, session: str, settings: SessionSettings, store: TurnStore | None = None
    ) -> Session:
        """A session that shares ``settings`` with others (as a host's sessions do),
        writing through ``store`` if given (else ``settings.store``)."""
        self = cls.__new__(cls)
        self._setup(session, settings, store)
        return self

    def _setup(
        self, session: str, settings: SessionSettings, store: TurnStore | None = None
    ) -> None:
        if settings.default_agent not in settings.agents:
            raise AgentConfigError(f"unknown agent {settings.default_agent!r}")
        self.session = session
        self.settings = settings
        self._store = settings.store if store is None else store
        self.agent_name = settings.default_agent
        # The transcript tail the next prompt starts with; None while idle, when it is the
        # last ``_history_size`` messages of the stored log (reloaded by the next turn).
        self.history: list[ChatMessage] | None = []
        # -1 when the tail opens with a compaction summary: it is then kept while idle (a
        # reload by count would not give the same messages).
        self._history_size = 0
        # Replaced, never changed in place (a shared empty mapping while there are none).
        self.facts: Mapping[str, str] = _NO_FACTS
        # The session's usage so far; None while idle with its tail dropped (the reload
        # brings the stored figure back).
        self.usage: Usage | None = Usage()
        self.turns = 0
        self.version = 0
        # Turns one at a time, in arrival order; made when a turn comes, dropped when the
        # last one leaves it (an idle session holds no lock).
        self._busy: _Busy | None = None
        # Facts set while a turn runs, committed with it (None: none; made on demand).
        self._pending_facts: tuple[dict[str, str], list[str]] | None = None
        # Notes of agent switches, sent and stored with the next turn (a tuple: () costs
        # nothing while idle).
        self._switch_notes: tuple[ChatMessage, ...] = ()
        # A write of this session's failed or was cut short, so the store may hold what
        # the session does not (see "Store faults"): its next turn reloads first.
        self._unsure = False
        # A turn the store holds open, kept to be resumed (durable configs only).
        self._open: OpenTurn | None = None

    async def on_start(self) -> None:
        snapshot = await self._load(self.settings.history_tail)
        self._adopt(snapshot)
        self._open = snapshot.open_turn
        if snapshot.agent in self.settings.agents:
            self.agent_name = snapshot.agent

    async def handle(self, msg: SessionRequest) -> Any:
        match msg:
            case am.SubmitTurn():
                return submit_turn(self, msg)
            case am.RunTurn():
                return await run_turn(self, msg)
            case am.CancelTurn():
                return await self._on_cancel(msg)
            case am.Approve():
                return self._on_approve(msg)
            case ApprovalRequest():
                return await self._on_approval_request(msg)
            case am.AnswerElicitation():
                return self._on_answer_elicitation(msg)
            case am.Elicit():
                return await self._on_elicit(msg)
            case am.ReportProgress():
                return await self._on_report_progress(msg)
            case am.SwitchAgent():
                return self._on_switch(msg)
            case am.SetFacts():
                return await self._on_set_facts(msg)
            case am.GetSessionInfo():
                return await self._on_info()
            case am.AnswerTurn():
                return await self._on_answer(msg)
            case am.ResumeTurn():
                return await self._on_resume()
            case _:
                assert_never(msg)

    # -- the turn (checked and queued by _session_queue) ----------------------------------

    async def _turn(
        self, user: UserMessage, turn_id: str, emit: Emit, overrides: am.ModelOverrides | None
    ) -> am.TurnResult:
        """The turn, holding the turn lock: refused by a guardrail, or begun and driven."""
        text = content_text(user.content)
        agent = self.settings.agents[self.agent_name]
        context = PromptContext(
            session=self.session, agent=agent.name, turn=self.turns, facts=visible_facts(self.facts)
        )
        # One scope for CancelTurn and the turn's timeout (a scope costs about an ask).
        scope = trio.CancelScope()
        run = run_context(self.session, turn_id, agent, self.settings.deps, scope)
        timeout = self.settings.config.turn_timeout
        refused = await refusal(self.settings.hooks, agent, context, run, text, timeout)
        if refused is not None:
            result = refused_result(failed_result(self.session, turn_id, refused), refused)
            await emit(am.TurnFailed(result))
            return result
        if self._open is not None:
            await self._resume_first()  # a turn left open goes first, or refuses this one
        notes = self._switch_notes
        history = await self._begin(turn_id, [*notes, user], agent.name)
        turn = self._make_turn(
            turn_id, agent, [*history, *notes], context, emit, overrides, scope, run
        )
        history.extend(notes)
        self._switch_notes = ()
        return await self._drive(turn, scope, context, emit, user=user)

    async def _drive(
        self,
        turn: Turn,
        scope: trio.CancelScope,
        context: PromptContext,
        emit: Emit,
        *,
        user: UserMessage | str = "",
        pending: list[str] | None = None,
    ) -> am.TurnResult:
        """Run ``turn`` (begun: the ``user`` message; resumed: its ``pending`` calls first) to its
        end, then commit it — or store it as suspended — whatever happens."""
        timeout = self.settings.config.turn_timeout
        status: am.TurnStatus = "completed"
        error: BaseException | None = None
        scope.deadline = math.inf if timeout is None else trio.current_time() + timeout
        busy = self._busy
        assert busy is not None  # the turn holds the lock
        busy.running = _Running(turn, scope, emit)
        run = turn.run_context
        assert run is not None  # made by _make_turn
        try:
            # Begun: from here on, whatever happens, the turn is committed.
            await emit(
                am.TurnStarted(session=self.session, turn=turn.turn_id, agent=turn.agent.name)
            )
            with scope, providing(run):
                if pending is None:
                    finished = await turn.run(user)
                else:
                    finished = await turn.resume(pending)
                status = "completed" if finished else "cancelled"
                if turn.suspended:
                    status = "suspended"  # stored below, not committed
            if scope.cancelled_caught:
                if timeout is not None and trio.current_time() >= scope.deadline:
                    raise TurnTimeout(timeout)
                status = "cancelled"
        except AgcoreError as exc:
            status, error = ("blocked" if turn.blocked is not None else "failed"), exc
        except BaseException as exc:
            # Cancelled from outside (reader left, asker cancelled, shutdown) or a bug:
            # commit what the turn did, then let it propagate.
            crashed = not isinstance(exc, trio.Cancelled)
            # If this fails the session is unsure (see _commit); what cut the turn short
            # goes on either way.
            with contextlib.suppress(AgcoreError):
                await self._commit(turn, "failed" if crashed else "cancelled", exc)
            raise
        finally:
            busy.running = None
        if status == "suspended":
            result = await self._store_suspended(turn)
        else:
            result = await self._commit(turn, status, error)
        await emit(final_event(result))
        try:
            await self.settings.hooks.end(result, context.turn)
        except Exception:
            # The turn is committed; a failing observer must not turn it into a failure.
            _log.exception("session %r: on_turn_end hook failed", self.session)
        return result

    async def _commit(
        self, turn: Turn, status: am.TurnStatus, error: BaseException | None
    ) -> am.TurnResult:
        facts_set, facts_removed = self._pending_facts or ({}, [])
        self._pending_facts = None
        spent = spend_fact(self.facts, turn.cost)
        facts_set = {**facts_set, **spent} if spent else facts_set
        # A suspended turn that ends: its record goes, its answers are kept (same commit).
        closing = closing_facts(self.facts, turn.turn_id, status)
        try:
            self.version = await self._store_commit(
                turn,
                self.version,
                status,
                {**facts_set, **closing},
                [*facts_removed, SUSPENDED_FACT] if closing else facts_removed,
            )
        except BaseException:
            # Refused, timed out or lost with the store: the turn may be stored, or still
            # open. The session reloads before its next write; its facts go with that.
            self._unsure = True
            self._keep_facts({k: v for k, v in facts_set.items() if k not in spent}, facts_removed)
            raise
        if spent or closing:
            facts = {**self.facts, **spent, **closing}
            if closing:
                del facts[SUSPENDED_FACT]
            self.facts = facts
        if turn.resumed:
            self._open = None
        if not turn.messages:
            # Cut short before it ran: the begin stored the user's message, the tail here
            # does not have it. Reload it with the next turn (a rare path).
            self._unsure = True
        history = self.history
        assert history is not None  # loaded by the turn; dropped only when idle
        history.extend(turn.messages)
        if self.settings.history_tail is not None and len(history) > self.settings.history_tail:
            self.history = valid_tail(history, self.settings.history_tail)
        usage = self.usage
        assert usage is not None  # loaded with the history
        self.usage = usage + turn.usage
        if not turn.resumed:  # a resumed turn was counted by its begin, as stored
            self.turns += 1
        return turn.result(status, error)

    async def _run_child(
        self, agent: Agent, call_id: str, task: str
    ) -> tuple[am.ToolCallStatus, str, Usage, float]:
        """Run ``agent`` on ``task`` as a child session of this one (see _child), with
        the running turn's deps."""
        running = self._running()
        parent = running.turn.run_context if running is not None else None
        return await run_child_session(
            self.session,
            agent,
            call_id,
            task,
            store=self._store,
            config=self.settings.config,
            ports=self.settings.ports,
            commit=self._store_commit,
            commit_timeout=self.settings.commit_timeout,
            deps=parent.deps if parent is not None else None,
        )
