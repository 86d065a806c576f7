"""The cluster's leaves of the error tree.

::

    ClusterError                cluster                    several hosts, one owner per session
    ├── ClusterConfigError      cluster_config             (ValueError) a bad ``[cluster]`` setting
    ├── SessionOwnedElsewhere   cluster_owned_elsewhere    another live host holds the session's
    │                                                      lease: ask it (``host``, ``address``)
    └── LeaseLost               cluster_lease_lost         this host stopped serving the session:
                                                           its lease was lost, refused or could
                                                           not be renewed in time

A write refused for a stale fencing token is the store's
:class:`~agcore_actors.store.Fenced`; :class:`LeaseLost` is what this host answers
itself, without asking the store, once it knows its lease is gone.
"""

from __future__ import annotations

from .._errors import AgcoreError

__all__ = ["ClusterConfigError", "ClusterError", "LeaseLost", "SessionOwnedElsewhere"]


class ClusterError(AgcoreError):
    """Base class of the cluster's own errors."""

    kind = "cluster"


class ClusterConfigError(ClusterError, ValueError):
    """A ``[cluster]`` setting that cannot work (``field`` names it); nothing started."""

    kind = "cluster_config"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"cluster setting {field}: {reason}")
        self.field = field
        self.reason = reason


class SessionOwnedElsewhere(ClusterError):
    """Another host holds an unexpired lease on ``session``: it is live there.

    ``host`` is the owner's id, ``address`` where it takes forwarded requests ("" if it
    registered none or is not registered any more), ``seconds_left`` how long its lease
    has to run by the store's clock unless renewed. Nothing was started or written here.
    """

    kind = "cluster_owned_elsewhere"

    def __init__(self, session: str, host: str, address: str, seconds_left: float) -> None:
        where = f" at {address}" if address else ""
        super().__init__(
            f"session {session!r} is owned by host {host!r}{where} "
            f"(lease for {seconds_left:.1f} s more)"
        )
        self.session = session
        self.host = host
        self.address = address
        self.seconds_left = seconds_left

    def is_retryable(self) -> bool:
        # Once the owner lets go (or dies and its lease expires) the same request works.
        return True


class LeaseLost(ClusterError):
    """This host no longer owns ``session`` (``reason``: ``lost``, the store gave the
    lease to another host; ``fenced``, a write was refused for a stale token;
    ``self_fenced``, no renewal succeeded in time): the session was dropped here without
    another store write. Sending the request again activates it anew, here or where its
    new owner is."""

    kind = "cluster_lease_lost"

    def __init__(self, session: str, reason: str) -> None:
        super().__init__(f"session {session!r}: this host lost its lease ({reason})")
        self.session = session
        self.reason = reason

    def is_retryable(self) -> bool:
        return True
