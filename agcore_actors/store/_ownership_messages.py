"""The SessionStore's ownership protocol: leases on sessions and the host registry.

These requests and replies are part of :data:`agcore_actors.store.messages.StoreMsg` and
are re-exported (and named, in reprs) by :mod:`agcore_actors.store.messages`, whose
docstring is the whole protocol's overview: use them from there (``sm.AcquireLease``).
They live apart only to keep that module short.
"""

from __future__ import annotations

import msgspec

from ..actor import Request
from ._message_values import Deleted

__all__ = [
    "AcquireLease",
    "FindLease",
    "HostHeartbeat",
    "HostRecord",
    "Hosts",
    "Lease",
    "LeaseRef",
    "ListHosts",
    "RegisterHost",
    "ReleaseLeases",
    "ReleasedLeases",
    "RenewLeases",
    "RenewedLeases",
    "UnregisterHost",
]

# -- replies --------------------------------------------------------------------------


class Lease(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A session's lease: which host holds it, its fencing token, until when."""

    session: str
    #: The host it was granted to (a released or expired lease keeps its last holder).
    host: str
    #: The fencing token of this grant: one above the session's previous grant.
    token: int
    #: Seconds on the store's clock when it expires (when it was released, if it was).
    expires_at: float
    #: Seconds it had left when the store read it (<= 0: expired or released); unlike
    #: ``expires_at`` it means the same on any host's clock.
    expires_in: float = 0.0
    released: bool = False
    #: In ``AcquireLease``'s reply only: the host the session's previous grant went to,
    #: unless that one was released (a takeover from a dead or stalled host, or a grant
    #: renewed to the same host); None otherwise, and in every other reply.
    previous_host: str | None = None

    @property
    def live(self) -> bool:
        """Held, as the store saw it: not released and not expired."""
        return not self.released and self.expires_in > 0


#: ``(session, token)``: a lease as its holder names it.
LeaseRef = tuple[str, int]


class RenewedLeases(msgspec.Struct, frozen=True, kw_only=True):
    """Which leases were renewed (to ``expires_at``), and which the host had lost."""

    renewed: list[str]
    #: Held by another grant now, released, expired or never granted: stop using them.
    lost: list[str]
    #: The renewed leases' new expiry, on the store's clock.
    expires_at: float
    #: Whether the host's heartbeat was refreshed too (False: it is not registered).
    heartbeat: bool = False


class ReleasedLeases(msgspec.Struct, frozen=True):
    """The sessions whose lease the host held with that token and has now released."""

    released: list[str]


class HostRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A registered host: its id, where others reach it, and its heartbeat."""

    host: str
    #: Where other hosts forward to (e.g. ``http://10.0.0.2:8080``); opaque to the store.
    address: str
    #: When it (last) registered, on the store's clock.
    registered_at: float
    #: When its heartbeat runs out, on the store's clock.
    expires_at: float
    #: Seconds left when the store read it (<= 0: presumed dead).
    expires_in: float = 0.0

    @property
    def alive(self) -> bool:
        return self.expires_in > 0


class Hosts(msgspec.Struct, frozen=True):
    """Every registered host, ordered by id, dead ones included (see ``alive``)."""

    hosts: list[HostRecord]


# -- requests -------------------------------------------------------------------------


class AcquireLease(Request[Lease], frozen=True, tag=True, kw_only=True):
    """Lease ``session`` to ``host`` for ``ttl`` seconds with a new fencing token."""

    session: str
    host: str
    ttl: float


class RenewLeases(Request[RenewedLeases], frozen=True, tag=True, kw_only=True):
    """Extend ``host``'s leases by ``ttl`` seconds from now, and its heartbeat."""

    host: str
    ttl: float
    leases: list[LeaseRef] = msgspec.field(default_factory=list)


class ReleaseLeases(Request[ReleasedLeases], frozen=True, tag=True, kw_only=True):
    """Give up ``host``'s leases (tokens kept: the next grant is one above)."""

    host: str
    leases: list[LeaseRef]


class FindLease(Request[Lease | None], frozen=True, tag=True):
    """The session's lease as it stands (None: never granted), live or not."""

    session: str


class RegisterHost(Request[HostRecord], frozen=True, tag=True, kw_only=True):
    """Register (or re-register, after a restart) ``host`` at ``address``, alive for
    ``ttl`` seconds unless its heartbeat is refreshed."""

    host: str
    address: str
    ttl: float


class HostHeartbeat(Request[HostRecord], frozen=True, tag=True, kw_only=True):
    """Keep ``host`` alive ``ttl`` seconds more (``RenewLeases`` does it too)."""

    host: str
    ttl: float


class ListHosts(Request[Hosts], frozen=True, tag=True):
    """Every registered host with its liveness by the store's clock."""


class UnregisterHost(Request[Deleted], frozen=True, tag=True):
    """Remove ``host`` from the registry (its leases stay until released or expired)."""

    host: str
