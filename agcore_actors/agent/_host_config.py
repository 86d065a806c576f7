"""What a :class:`~agcore_actors.agent.SessionHost` is configured with and reports."""

from __future__ import annotations

import attrs
import msgspec

from .._validators import at_least_one, non_negative, positive
from ..cluster import ClusterSnapshot

__all__ = ["HostConfig", "HostSnapshot"]


@attrs.frozen(kw_only=True)
class HostConfig:
    """Limits of a :class:`SessionHost`."""

    #: Seconds a live session may stay idle before it is deactivated.
    idle_ttl: float = attrs.field(default=600.0, validator=positive)
    #: Live sessions at most; beyond it the least recently used idle one goes. While every
    #: live session is busy the host goes over (by at most the turns in flight) and shrinks
    #: back as their turns end.
    max_sessions: int = attrs.field(default=10_000, validator=at_least_one)
    #: Turns running at once across all sessions; more wait.
    max_turns_in_flight: int = attrs.field(default=256, validator=at_least_one)
    #: Turns waiting behind a session's running turn; one more is ``SessionBusy``.
    max_queued: int = attrs.field(default=4, validator=at_least_one)
    #: Messages of a session's transcript kept live (and loaded on activation).
    history_tail: int = attrs.field(default=200, validator=at_least_one)
    #: Crashes within ``crash_window`` seconds that park a session.
    crash_limit: int = attrs.field(default=3, validator=at_least_one)
    crash_window: float = attrs.field(default=60.0, validator=positive)
    #: Seconds turns in flight get to finish when the host shuts down.
    drain_timeout: float = attrs.field(default=30.0, validator=non_negative)


class HostSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """Counters of a host, for metrics and the observer."""

    live: int
    busy: int
    turns_in_flight: int
    activated: int
    deactivated: int
    evicted_idle: int
    evicted_cap: int
    crashes: int
    parked: int
    #: Leases, takeovers, fenced writes, losses and self-fencing of a clustered host.
    cluster: ClusterSnapshot | None = None
