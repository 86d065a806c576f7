"""The lease keeper's decisions, as plain functions on frozen data (no trio, no I/O).

The one rule everything follows: a grant or renewal of a lease is judged by when its
request was **sent**, on the host's own clock. The store sets the lease's expiry to
*its* time of receiving the request plus the TTL, which is no earlier than the sending
(a request is never received before it is sent), so a host that stops serving at
``sent + ttl - margin`` always stops before the store can hand the lease to another
host — however late the reply arrives, or if it never does — provided its clock runs no
slower than the store's by more than ``margin`` over a TTL.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs

from ._config import ClusterConfig

__all__ = [
    "Held",
    "LeaseTiming",
    "RenewalOutcome",
    "after_renewal",
    "fence_deadline",
    "next_renewal",
    "overdue",
]


@attrs.frozen
class LeaseTiming:
    """The three durations every decision needs (see :class:`ClusterConfig`)."""

    ttl: float
    renew_interval: float
    margin: float

    @classmethod
    def of(cls, config: ClusterConfig) -> LeaseTiming:
        return cls(config.lease_ttl, config.renew_interval, config.fence_margin)

    @property
    def in_flight(self) -> int:
        """Renewals awaiting their reply at once, at most: as many as are sent before
        the first of them could no longer save a lease (its deadline)."""
        return max(1, math.ceil((self.ttl - self.margin) / self.renew_interval))


@attrs.frozen
class Held:
    """A lease this host holds: its fencing token, and when the request that last
    granted or renewed it was sent (host clock)."""

    token: int
    sent: float


def fence_deadline(sent: float, timing: LeaseTiming) -> float:
    """The host's time from which it must no longer act on a lease granted or renewed
    by a request sent at ``sent``."""
    return sent + timing.ttl - timing.margin


def next_renewal(last_sent: float | None, now: float, timing: LeaseTiming) -> float:
    """When to send the next renewal: ``renew_interval`` after the last one was sent
    (at once if none was, or if that time has passed)."""
    if last_sent is None:
        return now
    return max(now, last_sent + timing.renew_interval)


def overdue(held: Mapping[str, Held], now: float, timing: LeaseTiming) -> list[str]:
    """The sessions whose lease the host must stop serving now (self-fencing): no grant
    or renewal sent recently enough succeeded."""
    return [s for s, h in held.items() if now >= fence_deadline(h.sent, timing)]


@attrs.frozen
class RenewalOutcome:
    """What a renewal's reply changes: the leases held after it, and the sessions lost
    (the store gave them to another host, or they expired there)."""

    held: dict[str, Held]
    lost: list[str]


def after_renewal(
    held: Mapping[str, Held],
    sent: float,
    renewed: Iterable[tuple[str, int]],
    lost: Iterable[tuple[str, int]],
) -> RenewalOutcome:
    """Apply the reply to a renewal sent at ``sent`` to the leases ``held`` now.

    Only a lease still held *with the same token* is touched: a renewed one is then
    judged from ``sent`` (never earlier than it already was: a grant sent after the
    renewal stays as it is), a lost one is dropped and reported. Pairs naming a lease
    the host has let go of or got again since (another token) are ignored, as are
    sessions the reply does not name (their renewal was not asked for, or not answered:
    their time runs on).
    """
    out = dict(held)
    for session, token in renewed:
        current = out.get(session)
        if current is not None and current.token == token and current.sent < sent:
            out[session] = Held(token, sent)
    gone: list[str] = []
    for session, token in lost:
        current = out.get(session)
        if current is not None and current.token == token:
            del out[session]
            gone.append(session)
    return RenewalOutcome(out, gone)
