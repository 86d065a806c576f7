"""The lease keeper: a host's leases on its sessions, renewed in one request per
interval, and given up by the host's own clock before they can expire in the store.

Guarantees:
    - A session is served here only under a lease granted to this host, and only until
      ``sent + lease_ttl - fence_margin`` on this host's clock, ``sent`` being when the
      last successful grant or renewal of it was *sent* (see :mod:`._policy`). Then the
      keeper revokes the lease's :class:`LeaseHandle` at once (self-fencing): every
      later use of it raises :class:`LeaseLost` without asking the store, and the host
      is told to drop the session.
    - One ``RenewLeases`` request per ``renew_interval`` for all the leases held, which
      also refreshes the host's heartbeat; a lease the store reports lost, and one whose
      write the store refused as :class:`~agcore_actors.store.Fenced`, is revoked the
      same way. Each renewal's reply is awaited until the deadline it was sent for
      (``sent + lease_ttl - fence_margin``), not only one interval: a store slower than
      ``renew_interval`` (a loaded one) still keeps the leases, and the next renewal
      goes out on time meanwhile (at most ``(lease_ttl - fence_margin) /
      renew_interval`` await their reply at once). A revoked lease is never written
      with again: not renewed, not released (another host may hold it by now), and no
      session write carries its token.
    - :meth:`LeaseKeeper.acquire` and :meth:`LeaseKeeper.release` are one store request
      each (the grant's reply names the previous holder, to tell a takeover). Cancelled in flight,
      a grant may be applied without the keeper knowing: it lapses after ``lease_ttl``
      (nothing renews it), as does a release that never arrives.
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import attrs
import trio

from .._errors import AgcoreError
from ..actor import ActorRef
from ..store import Fenced, LeaseHeld
from ..store import messages as sm
from ._config import ClusterConfig
from ._errors import LeaseLost, SessionOwnedElsewhere
from ._policy import Held, LeaseTiming, after_renewal, fence_deadline, next_renewal, overdue
from ._types import ClusterSnapshot, Local, Location, Remote, Unowned

__all__ = ["LeaseHandle", "LeaseKeeper", "OnLost"]

_log = logging.getLogger("agcore_actors.cluster")

#: ``(session, why)``: the keeper tells its host to drop a session it no longer owns
#: (``why``: ``lost``, ``fenced`` or ``self_fenced``). Called on the event loop; must not
#: block.
OnLost = Callable[[str, str], None]


class LeaseHandle:
    """This host's lease on one session, as its session's writes use it: the token to
    fence them with, until the keeper revokes it (which also cuts the writes in flight)."""

    __slots__ = ("_in_flight", "_keeper", "revoked", "session", "token")

    def __init__(self, keeper: LeaseKeeper, session: str, token: int) -> None:
        self._keeper = keeper
        self.session = session
        self.token = token
        #: Why the host no longer holds it (None while it does).
        self.revoked: str | None = None
        self._in_flight: set[trio.CancelScope] | None = None

    def check(self) -> int:
        """The token to fence a write with; :class:`LeaseLost` once revoked, or once its
        time is up by this host's clock (also before the watchdog had its turn, after
        the event loop was held up)."""
        if self.revoked is None:
            self._keeper._fence_if_overdue(self)
        if self.revoked is not None:
            raise LeaseLost(self.session, self.revoked)
        return self.token

    @contextmanager
    def cut_on_revoke(self) -> Iterator[None]:
        """Run a write that :meth:`revoke` cuts short: it then raises :class:`LeaseLost`
        (the write may or may not have reached the store, where its token decides)."""
        self.check()
        scope = trio.CancelScope()
        if self._in_flight is None:
            self._in_flight = set()
        self._in_flight.add(scope)
        try:
            with scope:
                yield
        finally:
            self._in_flight.discard(scope)
        if scope.cancelled_caught:
            raise LeaseLost(self.session, self.revoked or "revoked")

    def revoke(self, why: str) -> None:
        """No more writes under this lease (the first reason stays); those in flight are
        cut."""
        if self.revoked is None:
            self.revoked = why
        for scope in self._in_flight or ():
            scope.cancel()

    def refused(self, error: Fenced) -> None:
        """The store refused a write fenced with this token: revoke it (once)."""
        self._keeper._refused(self, error)


@attrs.define(eq=False)
class LeaseKeeper:
    """See the module docstring. The host runs :meth:`run` in its nursery.

    ``store`` is the SessionStore actor the sessions are stored in (leases and hosts
    live in the same store: one clock judges both).
    """

    store: ActorRef[Any]
    config: ClusterConfig = attrs.field(factory=ClusterConfig)
    timing: LeaseTiming = attrs.field(init=False)
    _held: dict[str, Held] = attrs.field(init=False, factory=dict)
    _handles: dict[str, LeaseHandle] = attrs.field(init=False, factory=dict)
    _addresses: dict[str, str] = attrs.field(init=False, factory=dict)
    _addresses_read: float = attrs.field(init=False, default=-math.inf)
    _on_lost: OnLost | None = attrs.field(init=False, default=None)
    _added: trio.Event = attrs.field(init=False, factory=trio.Event)
    _last_sent: float | None = attrs.field(init=False, default=None)
    _last_renewed: float | None = attrs.field(init=False, default=None)
    _in_flight: int = attrs.field(init=False, default=0)
    _renewal_done: trio.Event = attrs.field(init=False, factory=trio.Event)
    _slowest_renewal: float = attrs.field(init=False, default=0.0)
    _counts: collections.Counter[str] = attrs.field(init=False, factory=collections.Counter)

    def __attrs_post_init__(self) -> None:
        self.timing = LeaseTiming.of(self.config)

    @property
    def host(self) -> str:
        return self.config.host_id

    # -- leases -------------------------------------------------------------------------

    async def acquire(self, session: str) -> LeaseHandle:
        """A lease on ``session`` for this host (a new, higher token).

        Raises:
            SessionOwnedElsewhere: another host holds a live lease (nothing granted).
            AskTimeout: the store did not answer within ``lease_ttl - fence_margin``
                (a grant it applies later lapses after ``lease_ttl``).
        """
        sent = trio.current_time()
        try:
            # A grant answered later than this is of no use: it would be fenced at once.
            lease: sm.Lease = await self.store.ask(
                sm.AcquireLease(session=session, host=self.host, ttl=self.config.lease_ttl),
                timeout=self._span,
            )
        except LeaseHeld as held:
            self._counts["owned_elsewhere"] += 1
            address = await self.address_of(held.host)
            raise SessionOwnedElsewhere(session, held.host, address, held.seconds_left) from None
        old = self._handles.get(session)
        if old is not None:  # granted anew while held: the old token is stale now
            old.revoke("regranted")
        handle = self._handles[session] = LeaseHandle(self, session, lease.token)
        self._held[session] = Held(lease.token, sent)
        self._counts["acquired"] += 1
        previous = lease.previous_host
        if previous is not None and previous != self.host:
            self._counts["takeovers"] += 1
            _log.info("host %r: took session %r over from host %r", self.host, session, previous)
        self._added.set()
        return handle

    async def release(self, handle: LeaseHandle) -> None:
        """Give the lease up (after its session was stopped): one request; nothing if it
        was revoked. A release that fails lapses after ``lease_ttl``."""
        if handle.revoked is not None or self._handles.get(handle.session) is not handle:
            return
        handle.revoke("released")
        del self._handles[handle.session]
        self._held.pop(handle.session, None)
        with suppress(AgcoreError):
            await self.store.ask(
                sm.ReleaseLeases(host=self.host, leases=[(handle.session, handle.token)])
            )

    def _drop(self, session: str, why: str) -> None:
        handle = self._handles.pop(session, None)
        self._held.pop(session, None)
        if handle is None:
            return
        handle.revoke(why)
        if self._on_lost is not None:
            self._on_lost(session, why)

    def _fence_if_overdue(self, handle: LeaseHandle) -> None:
        held = self._held.get(handle.session)
        if (
            self._handles.get(handle.session) is handle
            and held is not None
            and trio.current_time() >= fence_deadline(held.sent, self.timing)
        ):
            self._counts["self_fences"] += 1
            self._drop(handle.session, "self_fenced")

    def _refused(self, handle: LeaseHandle, error: Fenced) -> None:
        self._counts["fenced_writes"] += 1
        _log.warning("host %r: %s; dropping the session", self.host, error)
        if self._handles.get(handle.session) is handle:
            self._drop(handle.session, "fenced")
        else:
            handle.revoke("fenced")

    # -- where a session lives ----------------------------------------------------------

    async def locate(self, session: str) -> Location:
        """Who owns ``session`` by its lease in the store (one read; the host answers
        :class:`Local` for a session live here without asking)."""
        if session in self._handles:
            return Local()
        lease: sm.Lease | None = await self.store.ask(sm.FindLease(session), timeout=self._span)
        if lease is None or not lease.live:
            return Unowned()
        if lease.host == self.host:
            return Local()  # granted here, and not live: activating it re-grants it
        address = await self.address_of(lease.host)
        return Remote(host=lease.host, address=address, seconds_left=lease.expires_in)

    async def address_of(self, host: str) -> str:
        """Where ``host`` registered to be reached ("" if it did not): the registry as
        read at most ``lease_ttl`` ago, read again for a host it does not name."""
        address = self._addresses.get(host)
        stale = trio.current_time() - self._addresses_read >= self.config.lease_ttl
        if address is None or stale:
            await self.hosts()
            address = self._addresses.get(host, "")
        return address

    async def hosts(self) -> list[sm.HostRecord]:
        """Every registered host (dead ones too: see ``alive``), read from the store."""
        hosts: sm.Hosts = await self.store.ask(sm.ListHosts(), timeout=self._span)
        self._addresses = {h.host: h.address for h in hosts.hosts}
        self._addresses_read = trio.current_time()
        return hosts.hosts

    # -- the background tasks -----------------------------------------------------------

    async def run(self, on_lost: OnLost, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Register this host, then renew its leases and fence them in time, until
        cancelled; ``on_lost`` is told of each session the host must drop."""
        self._on_lost = on_lost
        if self.config.address:
            await self._register()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watchdog)
            task_status.started()
            await self._renewer()

    async def unregister(self) -> None:
        """Leave the hosts registry (at a graceful stop, after every lease was released)."""
        if self.config.address:
            with suppress(AgcoreError):
                await self.store.ask(sm.UnregisterHost(self.host))

    async def _register(self) -> None:
        record: sm.HostRecord = await self.store.ask(
            sm.RegisterHost(host=self.host, address=self.config.address, ttl=self.config.lease_ttl)
        )
        self._addresses[record.host] = record.address

    async def _renewer(self) -> None:
        """One renewal sent every ``renew_interval``, each awaited in its own task: a
        slow reply holds up neither the next renewal nor this loop. At most
        :attr:`LeaseTiming.in_flight` are outstanding (a store that answers none waits
        with the next one until one of them ends)."""
        async with trio.open_nursery() as nursery:
            while True:
                now = trio.current_time()
                await trio.sleep_until(next_renewal(self._last_sent, now, self.timing))
                while self._in_flight >= self.timing.in_flight:
                    self._renewal_done = trio.Event()
                    await self._renewal_done.wait()
                sent = self._last_sent = trio.current_time()
                self._in_flight += 1
                nursery.start_soon(self._renew, sent)

    async def _renew(self, sent: float) -> None:
        """One renewal of every lease held now (and the heartbeat). Its reply counts
        whenever it arrives (it is judged by ``sent``), until the leases it could renew
        are past their deadline anyway (``sent + lease_ttl - fence_margin``)."""
        try:
            await self._renew_once(sent)
        finally:
            self._in_flight -= 1
            self._renewal_done.set()

    async def _renew_once(self, sent: float) -> None:
        tokens = {s: h.token for s, h in self._held.items()}
        request = sm.RenewLeases(
            host=self.host, ttl=self.config.lease_ttl, leases=list(tokens.items())
        )
        reply: sm.RenewedLeases | None = None
        with trio.move_on_at(fence_deadline(sent, self.timing)):
            try:
                reply = await self.store.ask(request)
            except AgcoreError as exc:
                _log.warning("host %r: renewal failed: %s", self.host, exc)
        self._slowest_renewal = max(self._slowest_renewal, trio.current_time() - sent)
        if reply is None:
            self._counts["renewal_failures"] += 1
            return
        if self._last_renewed is None or sent > self._last_renewed:
            self._last_renewed = sent
        outcome = after_renewal(
            self._held,
            sent,
            [(s, tokens[s]) for s in reply.renewed if s in tokens],
            [(s, tokens[s]) for s in reply.lost if s in tokens],
        )
        self._held = outcome.held
        for session in outcome.lost:
            self._counts["lease_losses"] += 1
            self._drop(session, "lost")
        if not reply.heartbeat and self.config.address:
            with suppress(AgcoreError):
                await self._register()  # the registry forgot us (expired, or cleaned)

    async def _watchdog(self) -> None:
        """Self-fencing: revoke every lease whose time is up by this host's clock."""
        while True:
            if not self._held:
                self._added = trio.Event()
                await self._added.wait()
                continue
            first = min(h.sent for h in self._held.values())
            await trio.sleep_until(fence_deadline(first, self.timing))
            late = overdue(self._held, trio.current_time(), self.timing)
            if late:
                self._counts["self_fences"] += 1
                _log.warning(
                    "host %r: no lease renewal succeeded in time; stopped serving %d session(s)",
                    self.host,
                    len(late),
                )
                for session in late:
                    self._drop(session, "self_fenced")

    @property
    def _span(self) -> float:
        return self.timing.ttl - self.timing.margin

    # -- observation --------------------------------------------------------------------

    def holds(self, session: str) -> bool:
        """Whether this host holds a lease on ``session`` now."""
        return session in self._handles

    @property
    def last_renewed(self) -> float | None:
        """When the last renewal that succeeded was sent (trio's clock; None: none yet)."""
        return self._last_renewed

    def snapshot(self) -> ClusterSnapshot:
        c = self._counts
        return ClusterSnapshot(
            host=self.host,
            leases_held=len(self._handles),
            acquired=c["acquired"],
            takeovers=c["takeovers"],
            owned_elsewhere=c["owned_elsewhere"],
            fenced_writes=c["fenced_writes"],
            lease_losses=c["lease_losses"],
            self_fences=c["self_fences"],
            renewal_failures=c["renewal_failures"],
            slowest_renewal=self._slowest_renewal,
        )
