"""What a host of a cluster is configured with: :class:`ClusterConfig` (``[cluster]``).

Every bad value is refused where the config is built, with a
:class:`~agcore_actors.cluster.ClusterConfigError` naming the field (also a
``ValueError``); nothing is started.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from .._ids import new_id
from ._errors import ClusterConfigError

__all__ = ["ClusterConfig", "default_host_id"]

#: The longest host id (it is stored with every lease and shown in errors).
MAX_HOST_ID = 128


def default_host_id() -> str:
    """A fresh host id: ``host-`` and 12 random hex digits (new at every start)."""
    return f"host-{new_id()[:12]}"


def _host_id(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= MAX_HOST_ID
        or not value.isascii()
        or not value.isprintable()
        or any(c.isspace() for c in value)
    ):
        raise ClusterConfigError(
            attribute.name, f"must be 1 to {MAX_HOST_ID} printable ASCII characters, no spaces"
        )


def _address(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or any(c.isspace() for c in value) or not value.isprintable():
        raise ClusterConfigError(attribute.name, "must be a URL without spaces, or empty")


def _seconds(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not value > 0
    ):
        raise ClusterConfigError(
            attribute.name, f"must be a finite number of seconds > 0, not {value!r}"
        )


def _margin(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not value >= 0
    ):
        raise ClusterConfigError(
            attribute.name, f"must be a finite number of seconds >= 0, not {value!r}"
        )


@attrs.frozen(kw_only=True)
class ClusterConfig:
    """One host of a cluster: who it is, where it is reached, and its lease timing.

    A host that activates a session holds a lease on it in the store for ``lease_ttl``
    seconds, renewed every ``renew_interval`` seconds (one request for all its leases).
    By its own clock it stops serving a session ``fence_margin`` seconds before the
    lease could expire in the store, counted from when the last successful renewal was
    *sent*; so one renewal may fail or be slow ``(lease_ttl - fence_margin) /
    renew_interval - 1`` times in a row (3 with the defaults) before it does.
    """

    #: This host's id, unique in the cluster (default: ``host-`` and 12 random hex
    #: digits, new at every start).
    host_id: str = attrs.field(factory=default_host_id, validator=_host_id)
    #: Where other hosts reach this one to forward a request (a URL); "" for nowhere.
    address: str = attrs.field(default="", validator=_address)
    #: Seconds a lease, and the host's registration, lasts in the store unless renewed.
    lease_ttl: float = attrs.field(default=10.0, validator=_seconds)
    #: Seconds between two renewals of all the host's leases (and its heartbeat).
    renew_interval: float = attrs.field(default=2.0, validator=_seconds)
    #: Seconds before a lease could expire in the store when the host stops serving the
    #: session, by its own clock (room for a slower clock and a busy event loop).
    fence_margin: float = attrs.field(default=2.0, validator=_margin)

    def __attrs_post_init__(self) -> None:
        if self.fence_margin >= self.lease_ttl:
            raise ClusterConfigError(
                "fence_margin",
                f"must be less than lease_ttl ({self.fence_margin:g} >= {self.lease_ttl:g})",
            )
        if self.renew_interval >= self.lease_ttl - self.fence_margin:
            raise ClusterConfigError(
                "renew_interval",
                f"must be less than lease_ttl - fence_margin "
                f"({self.renew_interval:g} >= {self.lease_ttl - self.fence_margin:g}): "
                "the host would stop serving before its first renewal",
            )
