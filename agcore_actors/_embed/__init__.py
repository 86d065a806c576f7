"""The machinery shared by the embedding faces (:mod:`agcore_actors.asyncio`,
:mod:`agcore_actors.blocking`): the trio side of the bridge, and what a host is made of."""

from ._portal import STREAM_WINDOW, Job, Portal, unwrap
from ._source import BuildBundle, HostSource, open_session_host

__all__ = [
    "STREAM_WINDOW",
    "BuildBundle",
    "HostSource",
    "Job",
    "Portal",
    "open_session_host",
    "unwrap",
]
