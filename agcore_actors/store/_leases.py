"""Ownership over a backend's primitives: leases with fencing tokens, and hosts.

Like :mod:`._ops`, each function applies one request and returns its reply, every check
before the first write. Lease and heartbeat times are on the store's clock
(:meth:`Backend.clock`), read in the request's own transaction; ``now`` (the actor's
clock) is only its fallback.

Why a write is safe against a host that lost its session: :func:`check_fence` reads the
session's lease in the write's transaction (locking it, on PostgreSQL, until the
transaction ends), so a grant to another host is ordered wholly before the write (which
then sees the new token and is refused) or wholly after it (and the new owner, which
loads the session after its grant, sees the write).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from ._backend import Backend
from ._errors import Fenced, FenceReason, HostNotFound, InvalidRequest, LeaseHeld
from .messages import (
    AcquireLease,
    Deleted,
    FindLease,
    HostHeartbeat,
    HostRecord,
    Hosts,
    Lease,
    LeaseRef,
    ListHosts,
    RegisterHost,
    ReleasedLeases,
    ReleaseLeases,
    RenewedLeases,
    RenewLeases,
    UnregisterHost,
)

_replace = msgspec.structs.replace


def _non_empty(what: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{what} must be a non-empty string")


def _ttl(ttl: object) -> float:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
        raise InvalidRequest(f"ttl must be a finite number of seconds, not {ttl!r}")
    if ttl <= 0:
        raise InvalidRequest(f"ttl must be > 0 seconds, not {ttl!r}")
    return float(ttl)


def _refs(leases: Sequence[LeaseRef]) -> list[LeaseRef]:
    """The leases, checked, each session once (its first pair kept)."""
    out: dict[str, LeaseRef] = {}
    for ref in leases:
        session, token = ref
        _non_empty("session", session)
        if isinstance(token, bool) or not isinstance(token, int):
            raise InvalidRequest(f"a lease token must be an int, not {token!r}")
        out.setdefault(session, (session, token))
    return list(out.values())


def _seen(lease: Lease, t: float) -> Lease:
    return _replace(lease, expires_in=lease.expires_at - t)


def check_fence(b: Backend, session: str, fence: int | None, now: float) -> None:
    """Refuse a write of ``session`` fenced with ``fence`` unless that is its live lease's
    token (see the module doc); nothing to do for an unfenced write."""
    if fence is None:
        return
    _non_empty("session", session)
    lease = b.lease(session, lock=True)
    current = 0 if lease is None else lease.token
    reason: FenceReason
    if lease is None or current == 0:
        reason = "none"
    elif current != fence:
        reason = "stale"
    elif lease.released:
        reason = "released"
    elif lease.expires_at <= b.clock(now):
        reason = "expired"
    else:
        return
    raise Fenced(session, reason, token=fence, current=current)


def held_elsewhere(lease: Lease | None, host: str, t: float) -> bool:
    """Whether ``lease`` is live at ``t`` and held by a host other than ``host`` (a grant
    to ``host`` is then refused)."""
    return (
        lease is not None
        and lease.token > 0
        and not lease.released
        and lease.expires_at > t
        and lease.host != host
    )


def acquire(b: Backend, m: AcquireLease, now: float) -> Lease:
    """Grant the lease, or refuse it (``LeaseHeld``) without having locked it: the lease
    is read first without a lock, and locked (and decided on again) only when it can be
    granted. A refused grant that queued for the row lock would hold up the renewals of
    the live lease behind it, and itself wait for its owner's write batch."""
    _non_empty("session", m.session)
    _non_empty("host", m.host)
    ttl = _ttl(m.ttl)
    t = b.clock(now)
    lease = b.lease(m.session, lock=False)
    if not held_elsewhere(lease, m.host, t):
        lease = b.lease(m.session, lock=True)
    if lease is not None and held_elsewhere(lease, m.host, t):
        raise LeaseHeld(
            m.session, host=lease.host, token=lease.token, seconds_left=lease.expires_at - t
        )
    token = 0 if lease is None else lease.token
    new = Lease(session=m.session, host=m.host, token=token + 1, expires_at=t + ttl)
    b.put_lease(new)
    previous = lease.host if lease is not None and token > 0 and not lease.released else None
    return _replace(_seen(new, t), previous_host=previous)


def renew(b: Backend, m: RenewLeases, now: float) -> RenewedLeases:
    _non_empty("host", m.host)
    ttl = _ttl(m.ttl)
    refs = _refs(m.leases)
    t = b.clock(now)
    renewed, heartbeat = b.renew_leases(m.host, refs, t, t + ttl)
    kept = set(renewed)
    return RenewedLeases(
        renewed=[s for s, _ in refs if s in kept],
        lost=[s for s, _ in refs if s not in kept],
        expires_at=t + ttl,
        heartbeat=heartbeat,
    )


def release(b: Backend, m: ReleaseLeases, now: float) -> ReleasedLeases:
    _non_empty("host", m.host)
    refs = _refs(m.leases)
    gone = set(b.release_leases(m.host, refs, b.clock(now)))
    return ReleasedLeases([s for s, _ in refs if s in gone])


def find(b: Backend, m: FindLease, now: float) -> Lease | None:
    _non_empty("session", m.session)
    lease = b.lease(m.session, lock=False)
    if lease is None or lease.token == 0:
        return None
    return _seen(lease, b.clock(now))


def register(b: Backend, m: RegisterHost, now: float) -> HostRecord:
    _non_empty("host", m.host)
    _non_empty("address", m.address)
    ttl = _ttl(m.ttl)
    t = b.clock(now)
    record = HostRecord(host=m.host, address=m.address, registered_at=t, expires_at=t + ttl)
    b.put_host(record)
    return _replace(record, expires_in=record.expires_at - t)


def heartbeat(b: Backend, m: HostHeartbeat, now: float) -> HostRecord:
    _non_empty("host", m.host)
    ttl = _ttl(m.ttl)
    found = b.host(m.host)
    if found is None:
        raise HostNotFound(m.host)
    t = b.clock(now)
    record = _replace(found, expires_at=t + ttl, expires_in=0.0)
    b.put_host(record)
    return _replace(record, expires_in=record.expires_at - t)


def list_hosts(b: Backend, m: ListHosts, now: float) -> Hosts:
    t = b.clock(now)
    return Hosts([_replace(h, expires_in=h.expires_at - t) for h in b.hosts()])


def unregister(b: Backend, m: UnregisterHost, now: float) -> Deleted:
    _non_empty("host", m.host)
    return Deleted([m.host] if b.delete_host(m.host) else [])
