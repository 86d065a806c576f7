"""SessionHost: many sessions in one process, live only while they are used.

Semantics:
    A session becomes live on its first message: its actor starts under the host's
    supervisor and loads its state from the store (an interrupted turn is repaired
    first). Concurrent first messages of one session share one activation. A live
    session that has been idle for ``idle_ttl`` seconds, or the least recently used idle
    one when more than ``max_sessions`` are live, is deactivated. Turns of different
    sessions run concurrently, at most ``max_turns_in_flight`` at once (more wait:
    back-pressure); turns of one session run one at a time in arrival order.

One way out:
    Every deactivation — idle TTL, the live cap, :meth:`SessionHost.close`,
    :meth:`SessionHost.delete`, host shutdown, a crash — takes the same path:
    *persist* what is not durable yet (nothing, between turns: a turn is committed
    before it reports its end, and facts when they are set), *close* the actor (its
    ``on_stop`` runs), *drop* every reference the host holds. An idle session costs its
    dormant actor (no task between turns: ``Session.hibernate``) and a bounded transcript
    tail while live, and nothing but its stored rows once deactivated.

Crashes:
    A session whose actor ends without the host's doing (it crashed) is deactivated and
    starts again from the store on its next message. The host learns of it from the
    call that failed with it — the session's own :class:`ActorCrashed` or
    :class:`ActorStopped` (not a peer's, which the session reports as its own error), or
    an error that is no ``AgcoreError`` from :meth:`SessionHost.run` or
    :meth:`SessionHost.ask` — or, when no caller saw it, from the session's next
    message, turn or control (see :mod:`._host_live`). Each crash is counted once. One
    that crashes ``crash_limit`` times within ``crash_window`` seconds is parked: its
    callers get :class:`SessionParked` until :meth:`SessionHost.close` or
    :meth:`SessionHost.delete` clears it. A session's crash never stops the host.

Cancellation:
    Leaving :meth:`SessionHost.submit`'s stream or cancelling :meth:`SessionHost.run`
    cancels that turn, which is committed before the cancellation completes. A caller
    cancelled at any point leaves the counters as they were (``busy``, turns in
    flight) and never an actor the host does not hold: one cancelled while its session
    starts leaves it live and idle. Leaving the host's ``async with`` drains: from then
    on a new turn or message (also one that waited for a turn slot) is refused with
    ``ActorStopped``, so a busy host drains in time; turns in flight get
    ``drain_timeout`` seconds to finish, then are cancelled (and committed); then every
    session is deactivated (see :mod:`._host_lifecycle`).

Several hosts:
    Given ``cluster`` (a :class:`~agcore_actors.cluster.LeaseKeeper` over the same
    store), the host shares the store with other hosts and owns a session only while it
    holds its lease (see :mod:`._host_live` and :mod:`agcore_actors.cluster`): a message
    for a session another live host holds fails with
    :class:`~agcore_actors.cluster.SessionOwnedElsewhere` (naming the owner and its
    address); :meth:`SessionHost.locate` says where a session lives without activating
    it. The keeper's tasks run in the host's nursery; leaving the host releases every
    lease (with the deactivations) and unregisters the host.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import trio
import trio.lowlevel

from ..actor import ActorCrashed, ActorStopped, ActorSystem, Supervisor
from ..cluster import LeaseKeeper, Local, Location
from ..llm import ContentPart
from . import messages as am
from ._bundle import RuntimeBundle
from ._errors import AgentConfigError
from ._host_config import HostConfig, HostSnapshot
from ._host_lifecycle import HostLifecycle
from ._host_live import Live
from ._store_port import StoreTurns

__all__ = ["SessionHost"]


class SessionHost(HostLifecycle):
    """See the module docstring. ``async with SessionHost(system, bundle) as host:``."""

    def __init__(
        self,
        system: ActorSystem,
        bundle: RuntimeBundle,
        config: HostConfig | None = None,
        *,
        name: str = "sessions",
        cluster: LeaseKeeper | None = None,
    ) -> None:
        if cluster is not None and not isinstance(bundle.store, StoreTurns):
            raise AgentConfigError("a clustered host needs the bundle's store to be StoreTurns")
        self.system = system
        self.bundle = bundle
        self.config = config or HostConfig()
        self.name = name
        self.cluster = cluster
        # Least recently used first: a plain dict keeps insertion order, and a session
        # used again is moved to the end by re-inserting it (an OrderedDict would cost
        # ~45 B more per live session).
        self._live: dict[str, Live] = {}
        self._crashes: dict[str, list[float]] = {}
        self._parked: set[str] = set()
        self._activating: dict[str, trio.Event] = {}
        self._closing: dict[str, trio.Event] = {}
        self._turns = trio.CapacityLimiter(self.config.max_turns_in_flight)
        self._supervisor: Supervisor | None = None
        self._lifecycle: Any = None
        self._counts = collections.Counter[str]()
        self._busy = 0
        self._idle = trio.Event()
        self._stopping = False
        self._over_cap = trio.Event()

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> SessionHost:
        self._lifecycle = self._run()
        await self._lifecycle.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        suppress_exc: bool | None = await self._lifecycle.__aexit__(exc_type, exc, tb)
        return suppress_exc

    # -- turns ---------------------------------------------------------------------------

    @asynccontextmanager
    async def submit(
        self,
        session: str,
        text: str,
        *,
        turn: str = "",
        settings: am.ModelOverrides | None = None,
        parts: Sequence[ContentPart] = (),
    ) -> AsyncIterator[AsyncIterator[am.TurnEvent]]:
        """Run a turn of ``session`` (with model ``settings`` of this turn only; ``parts``,
        images or files, after ``text`` in the user's message) and read its events:
        ``async with host.submit(id, text) as events: async for event in events``."""
        live = await self._enter_turn(session)
        try:
            request = am.SubmitTurn(
                text=text, turn=turn, settings=settings, parts=list(parts) or None
            )
            async with live.ref.stream(request) as events:
                yield events
        except Exception as exc:
            # Also an error of the caller's own code in the block: a bug of its own is
            # no crash of the session unless the session's actor has in fact ended.
            await self._turn_failed(session, live, exc, caller_code=True)
            self._raise_if_lost(session, live, exc)
            raise
        finally:
            self._leave_turn(session, live)

    async def run(
        self,
        session: str,
        text: str,
        *,
        turn: str = "",
        settings: am.ModelOverrides | None = None,
        parts: Sequence[ContentPart] = (),
    ) -> am.TurnResult:
        """Run a turn of ``session`` (with model ``settings`` of this turn only; ``parts``
        after ``text`` in the user's message) and return its result."""
        live = await self._enter_turn(session)
        try:
            request = am.RunTurn(text=text, turn=turn, settings=settings, parts=list(parts) or None)
            result: am.TurnResult = await live.ref.ask(request)
        except Exception as exc:
            await self._turn_failed(session, live, exc)
            self._raise_if_lost(session, live, exc)
            raise
        finally:
            self._leave_turn(session, live)
        return result

    async def cancel(self, session: str, mode: am.CancelMode = "immediate") -> bool:
        """Cancel the running turn of a live session, or its suspended turn (with a
        config that suspends or resumes turns, the session is activated for that);
        False if none runs or waits."""
        if session not in self._live and self.bundle.config.durable:
            suspended: bool = await self.ask(session, am.CancelTurn(mode))
            return suspended
        cancelled: bool = await self._control(session, am.CancelTurn(mode))
        return cancelled

    async def approve(self, session: str, call_id: str, allow: bool, reason: str = "") -> bool:
        """Answer an approval request of a live session's running turn."""
        msg = am.Approve(call_id=call_id, allow=allow, reason=reason)
        answered: bool = await self._control(session, msg)
        return answered

    async def answer(
        self,
        session: str,
        turn: str,
        call_id: str,
        *,
        allow: bool = True,
        reason: str = "",
        result: str | None = None,
        resume: bool = True,
        action: am.ElicitationAction | None = None,
        content: dict[str, object] | None = None,
    ) -> am.AnswerResult:
        """Answer call ``call_id`` of ``session``'s suspended turn ``turn`` (approve it,
        deny it with ``reason``, or give its ``result``; an awaited elicitation: its
        ``action`` and ``content``), activating the session if it is not live (an answer
        may come after any number of restarts). Once every awaited call is answered the
        turn resumes (``resume``) and the reply carries its result. An answer given
        twice counts once; :class:`StaleAnswer` if no turn waits for it."""
        msg = am.AnswerTurn(
            turn=turn,
            call_id=call_id,
            allow=allow,
            reason=reason,
            result=result,
            resume=resume,
            action=action,
            content=content,
        )
        answered: am.AnswerResult = await self.ask(session, msg)
        return answered

    async def resume(self, session: str) -> am.TurnResult:
        """Run ``session``'s open turn (left by a crash, or suspended and answered) from
        its last stored step to its end; :class:`SessionSuspended` while it waits."""
        result: am.TurnResult = await self.ask(session, am.ResumeTurn())
        return result

    async def answer_elicitation(
        self,
        session: str,
        elicitation_id: str,
        action: am.ElicitationAction,
        content: dict[str, object] | None = None,
    ) -> bool:
        """Answer an elicitation of a live session's running turn (an MCP server's
        question, shown as an ``ElicitationRequested`` event); False if none waits."""
        msg = am.AnswerElicitation(elicitation_id=elicitation_id, action=action, content=content)
        answered: bool = await self._control(session, msg)
        return answered

    async def _control(
        self, session: str, msg: am.CancelTurn | am.Approve | am.AnswerElicitation
    ) -> bool:
        """Send a control message to a live session's turn; False if it is not live (an
        incarnation that has ended runs no turn: it is deactivated, its crash counted)."""
        live = self._live.get(session)
        if live is None:
            return False
        if self._ended(live):
            await self._on_crash(session, live)
            return False
        try:
            done: bool = await live.ref.ask(msg)
        except (ActorCrashed, ActorStopped) as exc:
            if exc.actor != live.ref.name:
                raise
            await self._turn_failed(session, live, exc)
            return False
        except Exception as exc:
            await self._turn_failed(session, live, exc)
            raise
        return done

    async def ask(self, session: str, msg: Any) -> Any:
        """Send another message of the session protocol (facts, agent switch, info)."""
        live = await self._activate(session)
        live.busy += 1  # not evicted while it answers
        try:
            return await live.ref.ask(msg)
        except Exception as exc:
            await self._turn_failed(session, live, exc)
            self._raise_if_lost(session, live, exc)
            raise
        finally:
            live.busy -= 1
            live.last_used = trio.current_time()

    async def delete(self, session: str) -> bool:
        """Deactivate ``session`` and delete everything stored for it; False if the store
        had nothing. A turn running in it is cancelled (and committed) first. A clustered
        host deletes under the session's lease (no other host can activate it meanwhile; the
        delete carries its token, so one that reaches the store after the lease was lost is
        refused, :class:`~agcore_actors.cluster.LeaseLost`), and refuses with
        :class:`~agcore_actors.cluster.SessionOwnedElsewhere` a session another live host
        serves."""
        live = self._live.get(session)
        if live is not None and live.busy:
            await self.cancel(session)
            while self._live.get(session) is live and live.busy:
                await trio.lowlevel.checkpoint()
        await self.close(session)
        if self.cluster is None:
            return await self.bundle.store.delete(session)
        lease = await self.cluster.acquire(session)
        try:
            fenced = self._fenced(session, lease)
            assert fenced is not None
            return await fenced.delete(session)
        finally:
            await self._release(lease)

    async def close(self, session: str) -> None:
        """Deactivate ``session`` now (its data stays) and unpark it."""
        self._parked.discard(session)
        self._crashes.pop(session, None)
        await self._deactivate(session, "close")

    # -- observation ---------------------------------------------------------------------

    def snapshot(self) -> HostSnapshot:
        busy = sum(1 for live in self._live.values() if live.busy)
        in_flight = self.config.max_turns_in_flight - int(self._turns.available_tokens)
        return HostSnapshot(
            live=len(self._live),
            busy=busy,
            turns_in_flight=in_flight,
            activated=self._counts["activated"],
            deactivated=self._counts["deactivated"],
            evicted_idle=self._counts["evicted_idle"],
            evicted_cap=self._counts["evicted_cap"],
            crashes=self._counts["crashes"],
            parked=len(self._parked),
            cluster=None if self.cluster is None else self.cluster.snapshot(),
        )

    def is_live(self, session: str) -> bool:
        return session in self._live

    async def locate(self, session: str) -> Location:
        """Where ``session`` lives: :class:`~agcore_actors.cluster.Local` (live or being
        activated here, or free to be: always, on a host without a cluster),
        :class:`~agcore_actors.cluster.Remote` (another live host holds its lease: its id
        and address) or :class:`~agcore_actors.cluster.Unowned` (no live lease: a message
        here activates it). One read of the store for a session not live here; nothing
        is activated or written."""
        if self.cluster is None or session in self._live or session in self._activating:
            return Local()
        return await self.cluster.locate(session)

    @property
    def live_sessions(self) -> list[str]:
        return list(self._live)
