"""SessionHost: many sessions in one process, live only while they are used.

Semantics:
    A session becomes live on its first message: its actor starts under the host's
    supervisor and loads its state from the store (an interrupted turn is repaired
    first). A live session that has been idle for ``idle_ttl`` seconds, or the least
    recently used idle one when more than ``max_live`` are live, is deactivated. Turns of
    different sessions run concurrently, at most ``max_turns_in_flight`` at once (more
    wait: back-pressure); turns of one session run one at a time in arrival order.

One way out:
    Every deactivation — idle TTL, the live cap, :meth:`SessionHost.close`,
    :meth:`SessionHost.delete`, host shutdown, a crash — takes the same path:
    *persist* what is not durable yet (nothing, between turns: a turn is committed
    before it reports its end, and facts when they are set), *close* the actor (its
    ``on_stop`` runs), *drop* every reference the host holds. An idle session costs its
    dormant actor (no task between turns: ``Session.hibernate``) and a bounded transcript
    tail while live, and nothing but its stored rows once deactivated.

Crashes:
    A session whose actor crashes is deactivated and starts again from the store on its
    next message. One that crashes ``crash_limit`` times within ``crash_window`` seconds
    is parked: its callers get :class:`SessionParked` until :meth:`SessionHost.close`
    or :meth:`SessionHost.delete` clears it. A session's crash never stops the host.

Cancellation:
    Leaving :meth:`SessionHost.submit`'s stream or cancelling :meth:`SessionHost.run`
    cancels that turn, which is committed before the cancellation completes. Leaving
    the host's ``async with`` drains: from then on a new turn or message (also one that
    waited for a turn slot) is refused with ``ActorStopped``, so a busy host drains in
    time; turns in flight get ``drain_timeout`` seconds to finish, then are cancelled
    (and committed); then every session is deactivated.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import Any

import attrs
import trio
import trio.lowlevel

from .._errors import AgcoreError
from ..actor import (
    ActorCrashed,
    ActorRef,
    ActorStopped,
    ActorSystem,
    NoSuchActor,
    Restart,
    Strategy,
    Supervisor,
    SupervisorSpec,
)
from ..actor.policy import Intensity
from . import messages as am
from ._bundle import RuntimeBundle, session_name, session_spec
from ._errors import SessionParked
from ._host_config import HostConfig, HostSnapshot

__all__ = ["SessionHost"]


@attrs.define(weakref_slot=False)  # one per live session: no slot nobody uses
class _Live:
    ref: ActorRef[Any]
    last_used: float
    busy: int = 0


class SessionHost:
    """See the module docstring. ``async with SessionHost(system, bundle) as host:``."""

    def __init__(
        self,
        system: ActorSystem,
        bundle: RuntimeBundle,
        config: HostConfig | None = None,
        *,
        name: str = "sessions",
    ) -> None:
        self.system = system
        self.bundle = bundle
        self.config = config or HostConfig()
        self.name = name
        # Least recently used first: a plain dict keeps insertion order, and a session
        # used again is moved to the end by re-inserting it (an OrderedDict would cost
        # ~45 B more per live session).
        self._live: dict[str, _Live] = {}
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

    @asynccontextmanager
    async def _run(self) -> AsyncIterator[None]:
        spec = SupervisorSpec(
            name=self.name,
            strategy=Strategy.ONE_FOR_ONE,
            # Sessions are temporary children: the host, not the supervisor, restarts them,
            # so no number of session crashes can exhaust this supervisor.
            intensity=Intensity(max_restarts=1_000_000, period=1.0),
        )
        self._supervisor = await self.system.start_supervisor(spec)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._sweeper)
            nursery.start_soon(self._shrinker)
            try:
                yield
            finally:
                with trio.CancelScope(shield=True):
                    self._stopping = True
                    await self._drain()
                    for session in list(self._live):
                        await self._deactivate(session, "shutdown")
                    await self.system.stop(self.name)
                nursery.cancel_scope.cancel()

    async def _drain(self) -> None:
        with trio.move_on_after(self.config.drain_timeout):
            await self._all_idle()
        for session, live in list(self._live.items()):
            if live.busy:
                await self.cancel(session)
        await self._all_idle()

    async def _all_idle(self) -> None:
        while self._busy:
            self._idle = trio.Event()
            await self._idle.wait()

    # -- turns ---------------------------------------------------------------------------

    @asynccontextmanager
    async def submit(
        self, session: str, text: str, *, turn: str = ""
    ) -> AsyncIterator[AsyncIterator[am.TurnEvent]]:
        """Run a turn of ``session`` and read its events:
        ``async with host.submit(id, text) as events: async for event in events``."""
        live = await self._enter_turn(session)
        try:
            async with live.ref.stream(am.SubmitTurn(text=text, turn=turn)) as events:
                yield events
        except Exception as exc:
            # Also an error of the caller's own code in the block: a bug of its own is
            # no crash of the session unless the session's actor has in fact ended.
            await self._turn_failed(session, live, exc, caller_code=True)
            raise
        finally:
            self._leave_turn(session, live)

    async def run(self, session: str, text: str, *, turn: str = "") -> am.TurnResult:
        """Run a turn of ``session`` and return its result."""
        live = await self._enter_turn(session)
        try:
            result: am.TurnResult = await live.ref.ask(am.RunTurn(text=text, turn=turn))
        except Exception as exc:
            await self._turn_failed(session, live, exc)
            raise
        finally:
            self._leave_turn(session, live)
        return result

    async def _enter_turn(self, session: str) -> _Live:
        """Take a turn slot and the live session (activated if need be).

        Cancellation: either nothing is taken, or both are and the caller's ``finally``
        gives them back (no checkpoint between ``_activate`` returning and the counts).
        """
        turns = self._turns
        try:
            turns.acquire_nowait()  # a free slot: no schedule point here (the ask has one)
        except trio.WouldBlock:
            await turns.acquire()
        try:
            live = await self._activate(session)
        except BaseException:
            turns.release()
            raise
        live.busy += 1
        self._busy += 1
        return live

    async def _turn_failed(
        self, session: str, live: _Live, error: Exception, *, caller_code: bool = False
    ) -> None:
        """Deactivate ``live`` (counted as a crash) if ``error`` says its actor has ended.

        It has ended when the error is the runtime's :class:`ActorCrashed` or
        :class:`ActorStopped` *of that actor* (not of a peer further down, whose error
        the session reports as its own), or any error that is no :class:`AgcoreError`:
        the session expects only those, so another one crashed it. An error raised by
        the caller's own code in a ``submit`` block counts only if the actor is gone.
        Only the first caller to see the end of an incarnation counts it (the others
        find it dropped already).
        """
        if self._live.get(session) is not live:
            return  # deactivated already (by us, or by a caller who saw the end first)
        if isinstance(error, (ActorCrashed, ActorStopped)):
            gone = error.actor == live.ref.name
        elif isinstance(error, AgcoreError):
            gone = False
        else:
            gone = not caller_code or self._ended(live)
        if gone:
            await self._on_crash(session, live)

    def _leave_turn(self, session: str, live: _Live) -> None:
        live.busy -= 1
        self._busy -= 1
        if not self._busy:
            self._idle.set()
        live.last_used = trio.current_time()
        if self._live.get(session) is live:
            self._live[session] = self._live.pop(session)  # most recent last
        if len(self._live) > self.config.max_live:
            self._over_cap.set()  # over the cap while all were busy: shrink now
        self._turns.release()

    async def cancel(self, session: str, mode: am.CancelMode = "immediate") -> bool:
        """Cancel the running turn of a live session; False if none runs."""
        cancelled: bool = await self._control(session, am.CancelTurn(mode))
        return cancelled

    async def approve(self, session: str, call_id: str, allow: bool, reason: str = "") -> bool:
        """Answer an approval request of a live session's running turn."""
        msg = am.Approve(call_id=call_id, allow=allow, reason=reason)
        answered: bool = await self._control(session, msg)
        return answered

    async def _control(self, session: str, msg: am.CancelTurn | am.Approve) -> bool:
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
            raise
        finally:
            live.busy -= 1
            live.last_used = trio.current_time()

    # -- activation and the one way out ---------------------------------------------------

    async def _activate(self, session: str) -> _Live:
        """The live incarnation of ``session``, started if there is none.

        Concurrent callers for one session share one activation (and wait for a close
        under way to finish first). An incarnation whose actor has ended without the
        host's doing (a crash that no caller saw) is deactivated here, its crash counted.

        Cancellation: the start is shielded (the supervisor completes a start whose
        caller is gone), so a started actor is always in ``_live``: never one the host
        does not hold, whose name would make every later start fail.
        """
        while True:
            if self._stopping:
                raise ActorStopped(self.name, "is shutting down")
            if session in self._parked:
                raise SessionParked(session, len(self._crashes.get(session, ())))
            live = self._live.get(session)
            if live is not None:
                if self._ended(live):
                    await self._on_crash(session, live)
                    continue
                self._live[session] = self._live.pop(session)  # most recent last
                return live
            pending = self._activating.get(session)
            if pending is None:
                pending = self._closing.get(session)
                if pending is None:
                    break
            await pending.wait()
        done = self._activating[session] = trio.Event()
        try:
            await self._make_room()
            assert self._supervisor is not None
            spec = session_spec(
                session,
                self.bundle,
                max_queued=self.config.max_queued,
                history_tail=self.config.history_tail,
                restart=Restart.TEMPORARY,
            )
            with trio.CancelScope(shield=True):
                ref = await self._supervisor.start_child(spec)
            live = _Live(ref, trio.current_time())
            self._live[session] = live
            self._counts["activated"] += 1
            return live
        finally:
            del self._activating[session]
            done.set()

    def _ended(self, live: _Live) -> bool:
        """Whether the actor of ``live`` has ended (a temporary child leaves the system's
        names when it ends): a plain look-up, no ask."""
        ref = live.ref
        try:
            return self.system.lookup(ref.name) is not ref
        except NoSuchActor:
            return True

    async def _make_room(self) -> None:
        # Activations under way count (this one included): concurrent first messages must
        # not each see the same free place.
        while len(self._live) + len(self._activating) > self.config.max_live:
            victim = next((s for s, live in self._live.items() if not live.busy), None)
            if victim is None:
                return  # every live session is busy: over the cap until turns end
            await self._deactivate(victim, "cap")

    async def _shrinker(self) -> None:
        """Back to the cap once turns end, after busy sessions pushed the host over it."""
        while True:
            await self._over_cap.wait()
            self._over_cap = trio.Event()
            while len(self._live) > self.config.max_live:
                victim = next((s for s, live in self._live.items() if not live.busy), None)
                if victim is None:
                    break
                await self._deactivate(victim, "cap")

    async def _deactivate(self, session: str, reason: str) -> None:
        """The one way out: persist → close → drop (see the module docstring)."""
        live = self._live.get(session)
        if live is None:
            return
        # Drop first from the live set, so no new turn picks this incarnation up; a new
        # message waits for the close below and then starts a fresh one.
        del self._live[session]
        closed = self._closing[session] = trio.Event()
        try:
            # Persist: between turns everything is durable already (turns commit before
            # they end, facts when they are set), so there is nothing to write here.
            # Close: stop the actor (its on_stop runs); a crashed one is gone already.
            with trio.CancelScope(shield=True), suppress(LookupError):
                await self.system.stop(session_name(session))
        finally:
            del self._closing[session]
            closed.set()
        self._counts["deactivated"] += 1
        if reason in ("idle", "cap"):
            self._counts[f"evicted_{reason}"] += 1

    async def _on_crash(self, session: str, live: _Live) -> None:
        """Count a crash of the incarnation ``live`` (once), park the session if it
        keeps crashing, and deactivate it."""
        if self._live.get(session) is not live:
            return
        now = trio.current_time()
        window = [t for t in self._crashes.get(session, []) if now - t < self.config.crash_window]
        window.append(now)
        self._crashes[session] = window
        self._counts["crashes"] += 1
        if len(window) >= self.config.crash_limit:
            self._parked.add(session)
        await self._deactivate(session, "crash")

    async def delete(self, session: str) -> bool:
        """Deactivate ``session`` and delete everything stored for it; False if the store
        had nothing. A turn running in it is cancelled (and committed) first."""
        live = self._live.get(session)
        if live is not None and live.busy:
            await self.cancel(session)
            while self._live.get(session) is live and live.busy:
                await trio.lowlevel.checkpoint()
        await self.close(session)
        return await self.bundle.store.delete(session)

    async def close(self, session: str) -> None:
        """Deactivate ``session`` now (its data stays) and unpark it."""
        self._parked.discard(session)
        self._crashes.pop(session, None)
        await self._deactivate(session, "close")

    async def _sweeper(self) -> None:
        ttl = self.config.idle_ttl
        while True:
            await trio.sleep(max(ttl / 4, 0.01))
            now = trio.current_time()
            idle = [
                s for s, live in self._live.items() if not live.busy and now - live.last_used >= ttl
            ]
            for session in idle:
                live = self._live.get(session)
                if live is not None and not live.busy and now - live.last_used >= ttl:
                    await self._deactivate(session, "idle")

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
        )

    def is_live(self, session: str) -> bool:
        return session in self._live

    @property
    def live_sessions(self) -> list[str]:
        return list(self._live)
