"""What an embedded host is made of: a function that builds its bundle, or settings.

Both faces (:mod:`agcore_actors.asyncio`, :mod:`agcore_actors.blocking`) take the same
*source* and open the same thing inside their trio run: an
:class:`~agcore_actors.actor.ActorSystem` and a
:class:`~agcore_actors.agent.SessionHost` over it, closed in the reverse order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeAlias

from ..actor import ActorSystem
from ..agent import AgentBuilder, HostConfig, RuntimeBundle, SessionHost
from ..config import Settings, open_runtime

__all__ = ["BuildBundle", "HostSource", "open_session_host"]

#: Starts the actors a host needs under ``system`` (in the trio run) and returns the
#: bundle, or the :class:`~agcore_actors.agent.AgentBuilder` that collects it.
BuildBundle: TypeAlias = Callable[[ActorSystem], Awaitable[RuntimeBundle | AgentBuilder]]

#: A bundle builder, or the product's settings (what ``agcore.toml`` describes).
HostSource: TypeAlias = BuildBundle | Settings


@asynccontextmanager
async def open_session_host(
    source: HostSource, config: HostConfig | None, name: str
) -> AsyncIterator[SessionHost]:
    """Start the actors of ``source`` and a SessionHost over them; stop both on exit.

    ``config`` overrides the settings' ``[host]`` limits (default: ``HostConfig()`` for a
    builder).
    """
    if isinstance(source, Settings):
        async with open_runtime(source) as runtime:
            limits = config or runtime.host_config
            async with SessionHost(runtime.system, runtime.bundle, limits, name=name) as host:
                yield host
        return
    async with ActorSystem() as system:
        built = await source(system)
        bundle = built.build() if isinstance(built, AgentBuilder) else built
        async with SessionHost(system, bundle, config, name=name) as host:
            yield host
