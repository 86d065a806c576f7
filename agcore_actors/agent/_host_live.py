"""The live sessions of a :class:`~._host.SessionHost`: activation, the one way out,
and noticing an incarnation that ended (a mixin of the host).

Guarantees:
    - One activation per session at a time: concurrent first messages (and messages
      arriving while the session is being deactivated) wait for it and share its result.
    - Activation is atomic w.r.t. cancellation: the actor's start is shielded (its
      supervisor would finish it anyway), so every ``session:<id>`` actor the host
      started is in the live set until the one way out stops it; a cancelled caller
      leaves a live idle session, later evicted as any other.
    - An incarnation whose actor ended without the host's doing (a crash) is dropped
      and counted once, whoever notices it first: a caller whose call failed with that
      actor's own end (:meth:`LiveSet._turn_failed`), or the session's next message,
      which finds the actor gone from the system's names (:meth:`LiveSet._ended`, a
      plain look-up per message, no ask). The next message then starts a fresh
      incarnation from the store, or is refused with :class:`SessionParked`. (A message
      sent in the scheduling pass between a crash and its supervisor dropping the
      actor fails with that actor's ``ActorStopped``, which is then what notices it.)
    - An activation that completes after the host began to stop refuses its caller
      with ``ActorStopped``; the host's shutdown waits for it and deactivates it.
    - On a clustered host (``cluster``, see :mod:`agcore_actors.cluster`) a session is
      live here only under this host's lease: the activation takes it before the actor
      starts (and loads, repairing an interrupted turn with the new token), shielded with
      the start, so every live session holds a lease and a lease taken is given back if
      the start fails; :class:`~agcore_actors.cluster.SessionOwnedElsewhere` when another
      live host holds it (nothing started). The way out releases it after the actor
      stopped. A session whose lease is revoked (lost, refused, self-fenced) has its
      turn cut and is dropped through the way out without another store write (its
      writes fail with :class:`~agcore_actors.cluster.LeaseLost` locally); its next
      message activates it anew.
"""

from __future__ import annotations

import collections
from contextlib import suppress
from typing import Any

import attrs
import trio

from .._errors import AgcoreError
from ..actor import (
    ActorCrashed,
    ActorRef,
    ActorStopped,
    ActorSystem,
    NoSuchActor,
    Restart,
    Supervisor,
)
from ..cluster import LeaseHandle, LeaseKeeper, LeaseLost
from . import messages as am
from ._bundle import RuntimeBundle, session_name, session_spec
from ._errors import SessionParked
from ._host_config import HostConfig
from ._store_fenced import FencedTurns
from ._store_port import StoreTurns

__all__ = ["LiveSet"]


@attrs.define(weakref_slot=False)  # one per live session: no slot nobody uses
class Live:
    """One live incarnation of a session: its actor, when it was last used, and how
    many callers are using it now (a busy session is never evicted)."""

    ref: ActorRef[Any]
    last_used: float
    busy: int = 0
    #: This host's lease on the session (a clustered host only).
    lease: LeaseHandle | None = None


class LiveSet:
    """Mixin of :class:`~._host.SessionHost`: what it does to its live sessions."""

    system: ActorSystem
    bundle: RuntimeBundle
    config: HostConfig
    name: str
    cluster: LeaseKeeper | None
    # Least recently used first (see SessionHost.__init__).
    _live: dict[str, Live]
    _crashes: dict[str, list[float]]
    _parked: set[str]
    _activating: dict[str, trio.Event]
    _closing: dict[str, trio.Event]
    _supervisor: Supervisor | None
    _counts: collections.Counter[str]
    _stopping: bool
    _over_cap: trio.Event
    _nursery: trio.Nursery

    async def _activate(self, session: str) -> Live:
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
                if live.lease is not None and live.lease.revoked is not None:
                    await self._deactivate(session, "lost")
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
            supervisor = self._supervisor
            assert supervisor is not None
            with trio.CancelScope(shield=True):
                lease = None if self.cluster is None else await self.cluster.acquire(session)
                try:
                    spec = session_spec(
                        session,
                        self.bundle,
                        max_queued=self.config.max_queued,
                        history_tail=self.config.history_tail,
                        restart=Restart.TEMPORARY,
                        store=self._fenced(session, lease),
                    )
                    ref = await supervisor.start_child(spec)
                except BaseException:
                    if lease is not None:
                        await self._release(lease)
                    raise
            live = Live(ref, trio.current_time(), lease=lease)
            self._live[session] = live
            self._counts["activated"] += 1
            if self._stopping:  # the host began to stop meanwhile: it deactivates this one
                raise ActorStopped(self.name, "is shutting down")
            return live
        finally:
            del self._activating[session]
            done.set()

    def _fenced(self, session: str, lease: LeaseHandle | None) -> FencedTurns | None:
        if lease is None:
            return None
        store = self.bundle.store
        assert isinstance(store, StoreTurns)  # checked when the host was made
        return FencedTurns(store.store, session, lease)

    async def _release(self, lease: LeaseHandle) -> None:
        """Give a lease back (shielded, within one lease TTL: after that it has lapsed)."""
        assert self.cluster is not None
        ttl = self.cluster.config.lease_ttl
        with trio.CancelScope(shield=True, deadline=trio.current_time() + ttl):
            await self.cluster.release(lease)

    def _on_lease_lost(self, session: str, why: str) -> None:
        """The keeper revoked this host's lease on ``session``: cut its turn and drop it
        (in the background: the keeper must not wait)."""
        live = self._live.get(session)
        if live is not None and live.lease is not None and live.lease.revoked is not None:
            # A nursery already closed (the host has stopped) has nothing left to drop.
            with suppress(RuntimeError):
                self._nursery.start_soon(self._drop_lost, session, live)

    async def _drop_lost(self, session: str, live: Live) -> None:
        if live.busy:
            # Cut the running turn (its commit fails locally: no store write), so the
            # stop below does not wait out a turn that can no longer be stored.
            with suppress(Exception):
                await live.ref.ask(am.CancelTurn("immediate"))
        if self._live.get(session) is live:
            await self._deactivate(session, "lost")

    def _raise_if_lost(self, session: str, live: Live, error: Exception) -> None:
        """A call that failed because its session was dropped for a lost lease (its actor
        stopped under it) raises :class:`LeaseLost`, what the caller can act on."""
        lease = live.lease
        if (
            lease is not None
            and lease.revoked is not None
            and isinstance(error, (ActorCrashed, ActorStopped))
            and error.actor == live.ref.name
        ):
            raise LeaseLost(session, lease.revoked) from error

    def _ended(self, live: Live) -> bool:
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
        while len(self._live) + len(self._activating) > self.config.max_sessions:
            victim = next((s for s, live in self._live.items() if not live.busy), None)
            if victim is None:
                return  # every live session is busy: over the cap until turns end
            await self._deactivate(victim, "cap")

    async def _shrinker(self) -> None:
        """Back to the cap once turns end, after busy sessions pushed the host over it."""
        while True:
            await self._over_cap.wait()
            self._over_cap = trio.Event()
            while len(self._live) > self.config.max_sessions:
                victim = next((s for s, live in self._live.items() if not live.busy), None)
                if victim is None:
                    break
                await self._deactivate(victim, "cap")

    async def _deactivate(self, session: str, reason: str) -> None:
        """The one way out: persist → close → drop (see :mod:`._host`)."""
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
            with trio.CancelScope(shield=True):
                with suppress(LookupError):
                    await self.system.stop(session_name(session))
                if live.lease is not None:
                    await self._release(live.lease)  # nothing if it was revoked
        finally:
            del self._closing[session]
            closed.set()
        self._counts["deactivated"] += 1
        if reason in ("idle", "cap"):
            self._counts[f"evicted_{reason}"] += 1

    async def _on_crash(self, session: str, live: Live) -> None:
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

    async def _turn_failed(
        self, session: str, live: Live, error: Exception, *, caller_code: bool = False
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
        if live.lease is not None and live.lease.revoked is not None:
            await self._deactivate(session, "lost")  # no crash: the lease went
            return
        if isinstance(error, (ActorCrashed, ActorStopped)):
            gone = error.actor == live.ref.name
        elif isinstance(error, AgcoreError):
            gone = False
        else:
            gone = not caller_code or self._ended(live)
        if gone:
            await self._on_crash(session, live)

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
