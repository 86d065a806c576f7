"""A plain model of the store's leases and hosts, written from the protocol's
documentation (``agcore_actors/store/messages.py``), sharing no code with the store.

Each method returns the reply the store must give, or ``(error class name, reason)``.
Times are the store's clock (the actor's, on virtual time, in the tests)."""

from __future__ import annotations

from typing import Any

import attrs

from agcore_actors.store import messages as sm

Outcome = Any


@attrs.define
class Held:
    host: str
    token: int
    expires_at: float
    released: bool = False


@attrs.define
class Host:
    address: str
    registered_at: float
    expires_at: float


class LeaseModel:
    def __init__(self) -> None:
        self.leases: dict[str, Held] = {}
        self.hosts: dict[str, Host] = {}

    def token(self, sid: str) -> int:
        held = self.leases.get(sid)
        return 0 if held is None else held.token

    def fence(self, sid: str, token: int | None, now: float) -> tuple[str, str] | None:
        """The error a write fenced with ``token`` must get, or None (it goes ahead)."""
        if token is None:
            return None
        held = self.leases.get(sid)
        if held is None:
            return ("Fenced", "none")
        if held.token != token:
            return ("Fenced", "stale")
        if held.released:
            return ("Fenced", "released")
        if held.expires_at <= now:
            return ("Fenced", "expired")
        return None

    def live_holder(self, sid: str, now: float) -> str | None:
        held = self.leases.get(sid)
        if held is None or held.released or held.expires_at <= now:
            return None
        return held.host

    def acquire(self, sid: str, host: str, ttl: float, now: float) -> Outcome:
        if not ttl > 0 or ttl == float("inf"):
            return ("InvalidRequest", None)
        holder = self.live_holder(sid, now)
        if holder is not None and holder != host:
            return ("LeaseHeld", None)
        before = self.leases.get(sid)
        # The reply names the previous grant's host unless that lease was released.
        previous = None if before is None or before.released else before.host
        held = self.leases[sid] = Held(host, self.token(sid) + 1, now + ttl)
        return sm.Lease(
            session=sid,
            host=host,
            token=held.token,
            expires_at=held.expires_at,
            expires_in=held.expires_at - now,
            previous_host=previous,
        )

    def renew(self, host: str, pairs: list[tuple[str, int]], ttl: float, now: float) -> Outcome:
        chosen: dict[str, int] = {}
        for sid, tok in pairs:
            chosen.setdefault(sid, tok)  # a session named twice: its first pair counts
        order = list(chosen)
        renewed: list[str] = []
        for sid in order:
            held = self.leases.get(sid)
            if (
                held is not None
                and held.host == host
                and held.token == chosen[sid]
                and self.live_holder(sid, now) == host
            ):
                held.expires_at = now + ttl
                renewed.append(sid)
        beat = host in self.hosts
        if beat:
            self.hosts[host].expires_at = now + ttl
        return sm.RenewedLeases(
            renewed=renewed,
            lost=[s for s in order if s not in renewed],
            expires_at=now + ttl,
            heartbeat=beat,
        )

    def release(self, host: str, pairs: list[tuple[str, int]], now: float) -> Outcome:
        chosen: dict[str, int] = {}
        for sid, tok in pairs:
            chosen.setdefault(sid, tok)
        released: list[str] = []
        for sid, tok in chosen.items():
            held = self.leases.get(sid)
            if held is not None and held.host == host and held.token == tok and not held.released:
                held.released, held.expires_at = True, now
                released.append(sid)
        return sm.ReleasedLeases(released)

    def find(self, sid: str, now: float) -> Outcome:
        held = self.leases.get(sid)
        if held is None:
            return None
        return sm.Lease(
            session=sid,
            host=held.host,
            token=held.token,
            expires_at=held.expires_at,
            expires_in=held.expires_at - now,
            released=held.released,
        )

    def register(self, host: str, address: str, ttl: float, now: float) -> Outcome:
        h = self.hosts[host] = Host(address, now, now + ttl)
        return self._host(host, h, now)

    def heartbeat(self, host: str, ttl: float, now: float) -> Outcome:
        h = self.hosts.get(host)
        if h is None:
            return ("HostNotFound", None)
        h.expires_at = now + ttl
        return self._host(host, h, now)

    def list_hosts(self, now: float) -> Outcome:
        return sm.Hosts([self._host(k, self.hosts[k], now) for k in sorted(self.hosts)])

    def unregister(self, host: str) -> Outcome:
        return sm.Deleted([host] if self.hosts.pop(host, None) is not None else [])

    @staticmethod
    def _host(host: str, h: Host, now: float) -> sm.HostRecord:
        return sm.HostRecord(
            host=host,
            address=h.address,
            registered_at=h.registered_at,
            expires_at=h.expires_at,
            expires_in=h.expires_at - now,
        )
