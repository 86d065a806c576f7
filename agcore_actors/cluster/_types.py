"""What the cluster answers: where a session lives, and a host's ownership counters."""

from __future__ import annotations

import msgspec

__all__ = ["ClusterSnapshot", "Local", "Location", "Remote", "Unowned"]


class Local(msgspec.Struct, frozen=True):
    """The session is (or may be made) live on this host."""


class Remote(msgspec.Struct, frozen=True, kw_only=True):
    """Another host holds a live lease on the session: send the request there."""

    host: str
    #: Where that host takes forwarded requests ("" if it registered none).
    address: str
    #: Seconds its lease had left when the store read it (it may be renewed).
    seconds_left: float


class Unowned(msgspec.Struct, frozen=True):
    """No live lease: the first host to activate the session owns it (a takeover if
    its last owner died with a turn open: that turn is repaired first)."""


Location = Local | Remote | Unowned


class ClusterSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """Counters of a host's ownership, for metrics and the observer."""

    host: str
    #: Leases held now.
    leases_held: int = 0
    #: Leases granted to this host, takeovers included.
    acquired: int = 0
    #: Grants of a lease another host had let expire (its owner died or stalled).
    takeovers: int = 0
    #: Activations refused because another live host holds the lease.
    owned_elsewhere: int = 0
    #: Writes the store refused for a stale token (each drops its session).
    fenced_writes: int = 0
    #: Leases the store reported lost at a renewal.
    lease_losses: int = 0
    #: Times the host stopped serving sessions because no renewal succeeded in time.
    self_fences: int = 0
    #: Renewal requests that failed or timed out.
    renewal_failures: int = 0
    #: Seconds from sending a renewal to its reply (or to giving up on it), the longest
    #: seen so far: how close the store's latency came to the self-fencing deadline.
    slowest_renewal: float = 0.0
