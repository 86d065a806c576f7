"""A session's writes under a lease: :class:`FencedTurns`, the
:class:`~._store_port.StoreTurns` that one session of a clustered host writes through.

Every write of that session (begin, commit, facts, the repair of an interrupted turn
by a load, and its deletion) carries the lease's fencing token, so the store refuses it in the same
transaction once another host has been granted the session
(:class:`~agcore_actors.store.Fenced`). A refusal revokes the lease (the host drops the
session), and from then on — as once the keeper revoked it for a lost renewal or by
self-fencing — every load or write of that session raises
:class:`~agcore_actors.cluster.LeaseLost` at once, without asking the store: a session
that lost its lease never touches the store again. A write of it still in flight when the
lease is revoked is cut short (:class:`~agcore_actors.cluster.LeaseLost`; whether it
reached the store, its token decides there), except a turn's commit: that one is answered
by the store (within the commit's own timeout), because a commit sent under a token the
store still holds live (self-fencing comes ``fence_margin`` before the store's expiry)
may be applied, and its caller must then hear that the turn completed, not that it failed
and can be run again. Writes of other sessions (a turn's child sessions,
``<session>/<call id>``: only this turn writes them) go unfenced.
"""

from __future__ import annotations

from typing import Any

from ..actor import ActorRef
from ..cluster import LeaseHandle
from ..store import Fenced
from ..store import messages as sm
from ._store_port import StoreTurns

__all__ = ["FencedTurns"]


class FencedTurns(StoreTurns):
    """:class:`~._store_port.StoreTurns` for ``session`` under ``lease`` (see the module
    docstring); one per live session of a clustered host."""

    __slots__ = ("lease", "session")

    def __init__(self, store: ActorRef[Any], session: str, lease: LeaseHandle) -> None:
        super().__init__(store)
        self.session = session
        self.lease = lease

    def fence(self, session: str) -> int | None:
        """The lease's token for this session (:class:`LeaseLost` once it is revoked)."""
        return self.lease.check() if session == self.session else None

    async def _ask(self, request: Any) -> Any:
        session = getattr(request, "session", None)
        if isinstance(request, sm.DeleteSessions) and request.fence is not None:
            session = request.ids[0]
        if session != self.session:
            return await self.store.ask(request)
        try:
            if isinstance(request, sm.CommitTurn):
                # Fenced when it was made (``fence``: LeaseLost once revoked), not cut
                # after it is sent: only the store's answer says if the turn is stored.
                return await self.store.ask(request)
            with self.lease.cut_on_revoke():
                return await self.store.ask(request)
        except Fenced as exc:
            self.lease.refused(exc)
            raise
