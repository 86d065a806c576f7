"""How a :class:`~._host.SessionHost` starts and stops, and the turn slots its stop
waits for (a mixin of the host).

Guarantees:
    - Start: the host's supervisor, its sweeper and shrinker (:mod:`._host_live`) and,
      on a clustered host, the lease keeper's tasks run in the host's nursery.
    - A turn holds one of ``max_turns_in_flight`` slots and counts as busy from
      :meth:`HostLifecycle._enter_turn` to :meth:`HostLifecycle._leave_turn`; a caller
      cancelled while it enters holds neither.
    - Stop (leaving the host's ``async with``, shielded): new turns and messages are
      refused from then on; turns in flight get ``drain_timeout`` seconds to leave their
      slots, then are cancelled and waited for; activations under way end; every live
      session is deactivated; the supervisor stops; a clustered host unregisters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING

import trio

from ..actor import Strategy, SupervisorSpec
from ..actor.policy import Intensity
from . import messages as am
from ._host_live import Live, LiveSet

__all__ = ["HostLifecycle"]


class HostLifecycle(LiveSet):
    """Mixin of :class:`~._host.SessionHost`: its start, stop and turn slots."""

    _turns: trio.CapacityLimiter
    _busy: int
    _idle: trio.Event

    if TYPE_CHECKING:  # SessionHost's (declared for the checker, not defined here)

        async def cancel(self, session: str, mode: am.CancelMode = "immediate") -> bool: ...

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
            self._nursery = nursery
            nursery.start_soon(self._sweeper)
            nursery.start_soon(self._shrinker)
            try:
                if self.cluster is not None:
                    await nursery.start(self.cluster.run, self._on_lease_lost)
                yield
            finally:
                with trio.CancelScope(shield=True):
                    self._stopping = True
                    await self._drain()
                    while self._activating:  # each ends live, or failed to start
                        await next(iter(self._activating.values())).wait()
                    for session in list(self._live):
                        await self._deactivate(session, "shutdown")
                    await self.system.stop(self.name)
                    if self.cluster is not None:
                        await self.cluster.unregister()
                nursery.cancel_scope.cancel()

    async def _drain(self) -> None:
        with trio.move_on_after(self.config.drain_timeout):
            await self._all_idle()
        for session, live in list(self._live.items()):
            if live.busy:
                # A session that cannot be told is stopped by the deactivation anyway.
                with suppress(Exception):
                    await self.cancel(session)
        await self._all_idle()

    async def _all_idle(self) -> None:
        while self._busy:
            self._idle = trio.Event()
            await self._idle.wait()

    async def _enter_turn(self, session: str) -> Live:
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

    def _leave_turn(self, session: str, live: Live) -> None:
        live.busy -= 1
        self._busy -= 1
        if not self._busy:
            self._idle.set()
        live.last_used = trio.current_time()
        if self._live.get(session) is live:
            self._live[session] = self._live.pop(session)  # most recent last
        if len(self._live) > self.config.max_sessions:
            self._over_cap.set()  # over the cap while all were busy: shrink now
        self._turns.release()
