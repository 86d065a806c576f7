"""Several hosts, one owner per session: leases with fencing tokens in the session
store, renewed in batches and given up in time by each host's own clock.

::

    keeper = LeaseKeeper(store_ref, ClusterConfig(host_id="a", address="http://10.0.0.2:8080"))
    async with SessionHost(system, bundle, cluster=keeper) as host:
        where = await host.locate("chat-1")      # Local() | Remote(host, address) | Unowned()

A session is live on at most one host: the host that activates it takes its lease (a
fencing token that only grows), every write of the session carries the token and is
refused by the store in the same transaction once it is stale
(:class:`~agcore_actors.store.Fenced`), and the host drops a session whose lease it lost
without writing again. See :class:`LeaseKeeper` and docs/architecture.md ("Ownership").
"""

from __future__ import annotations

from .._exports import publish
from ._config import ClusterConfig, default_host_id
from ._errors import ClusterConfigError, ClusterError, LeaseLost, SessionOwnedElsewhere
from ._keeper import LeaseHandle, LeaseKeeper
from ._types import ClusterSnapshot, Local, Location, Remote, Unowned

__all__ = [
    "ClusterConfig",
    "ClusterConfigError",
    "ClusterError",
    "ClusterSnapshot",
    "LeaseHandle",
    "LeaseKeeper",
    "LeaseLost",
    "Local",
    "Location",
    "Remote",
    "SessionOwnedElsewhere",
    "Unowned",
    "default_host_id",
]

publish(__name__, __all__)
