"""How many model calls a runtime runs at once: each provider's ``max_concurrency``.

A provider's limit is its table's ``max_concurrency``, else ``[host]
max_turns_in_flight`` (the host never runs more turns than that, so by default the model
calls of the turns it lets run never wait behind a limit of their own).
:func:`concurrency` is the pure rule: the limit of each used provider and the
ProviderActor's (their sum, at least 2: the actor is concurrent). When one provider is
used, the actor's limit is that provider's and nothing else is needed; otherwise each
provider whose limit is below the actor's is wrapped in :class:`Limited`, which holds a
slot of its own for each attempt.

Cancellation: an attempt cancelled while it waits for a slot takes none; one cancelled
while it runs gives its slot back as it unwinds (a stream, when it is closed).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

import attrs
import trio

from ..llm import ChatRequest, ChatResponse, Provider
from ._schema import Settings

if TYPE_CHECKING:
    import httpx2

    from ..llm.wire import ChatDelta, ReadLimits

__all__ = ["Limited", "concurrency", "wrap"]


def concurrency(settings: Settings, used: Sequence[str]) -> tuple[dict[str, int], int]:
    """The limit of each provider in ``used`` and the ProviderActor's (their sum, >= 2)."""
    default = settings.host.max_turns_in_flight
    limits: dict[str, int] = {}
    for name in used:
        own = settings.providers[name].max_concurrency
        limits[name] = default if own is None else own
    return limits, max(2, sum(limits.values()))


@attrs.frozen
class Limited:
    """``inner`` with at most ``slots``' worth of attempts running at once.

    An attempt waits for a slot before it starts, so the wait counts toward its attempt
    timeout. ``inner.stream`` must take :class:`~agcore_actors.llm.wire.ReadLimits`
    (every provider of this library does).
    """

    inner: Provider
    slots: trio.Semaphore

    @property
    def name(self) -> str:
        return self.inner.name

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        async with self.slots:
            return await self.inner.chat(client, request)

    async def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest, limits: ReadLimits
    ) -> AsyncGenerator[ChatDelta, None]:
        async with self.slots, aclosing(self.inner.stream(client, request, limits)) as deltas:
            async for delta in deltas:
                yield delta


def wrap(provider: Provider, limit: int, total: int) -> Provider:
    """``provider`` itself when the actor's ``total`` already bounds it to ``limit``,
    else wrapped in :class:`Limited`."""
    if limit >= total:
        return provider
    return Limited(provider, trio.Semaphore(limit))
