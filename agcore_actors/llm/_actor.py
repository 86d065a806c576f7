"""ProviderActor: the LLM providers behind one concurrent actor.

It owns the HTTP client (made in ``on_start``, closed in ``on_stop``), runs
every call through the one retry loop (:class:`Caller`), accounts usage per
provider, and serves the protocol of :mod:`agcore_actors.llm.messages`.

- Concurrency: each request runs in its own task; at most ``max_in_flight``
  run at once (the runtime's ``max_concurrency``), further requests wait in
  the bounded mailbox. The client's connection pool is sized to match.
- Errors: every :class:`LlmError` is an expected error: it goes to the asker
  (or is raised from the stream's iteration) and the actor keeps running.
- Cancellation: an asker that is cancelled, times out, or leaves its stream
  early cancels its request; the HTTP response is closed before the
  cancellation completes, and no hook fires.
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx

from ..actor import Actor
from ._call import Caller
from ._errors import LlmError
from ._hooks import HookExecutor
from ._provider import ProviderRegistry
from ._retry import RetryConfig, Timeouts
from ._usage import CostTracker, Pricing, Usage
from .messages import (
    Chat,
    ChatResponse,
    ChatStream,
    GetUsage,
    ListProviders,
    ProviderList,
    ProviderMsg,
    ResetUsage,
    StreamEvent,
    UsageReport,
)

ClientFactory = Callable[[], httpx.AsyncClient]


def default_client(timeouts: Timeouts, max_in_flight: int) -> httpx.AsyncClient:
    """An AsyncClient whose only own timeout is connect: the retry loop bounds
    attempts on trio's clock."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(None, connect=timeouts.connect),
        limits=httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight),
        follow_redirects=False,
    )


class ProviderActor(Actor[ProviderMsg]):
    """See the module doc. Make instances with :func:`provider_actor`."""

    max_concurrency = 16
    expected_errors = (LlmError,)

    def __init__(
        self,
        registry: ProviderRegistry,
        *,
        retry: RetryConfig | None = None,
        timeouts: Timeouts | None = None,
        hooks: HookExecutor | None = None,
        pricing: Pricing | None = None,
        client_factory: ClientFactory | None = None,
        seed: int | None = None,
    ) -> None:
        self.registry = registry
        self.timeouts = timeouts or Timeouts()
        self.tracker = CostTracker(pricing)
        self.by_provider: dict[str, Usage] = {}
        self.caller = Caller(
            retry or RetryConfig(),
            self.timeouts,
            hooks or HookExecutor(),
            random.Random(seed),
            self._account,
        )
        self._client_factory = client_factory
        self.client: httpx.AsyncClient | None = None

    def _account(self, provider: str, usage: Usage) -> None:
        self.tracker.add(usage)
        self.by_provider[provider] = self.by_provider.get(provider, Usage()) + usage

    async def on_start(self) -> None:
        factory = self._client_factory
        self.client = (
            factory()
            if factory is not None
            else default_client(self.timeouts, self.max_concurrency)
        )

    async def on_stop(self, reason: BaseException | None) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    async def handle(self, msg: ProviderMsg) -> Any:
        match msg:
            case Chat():
                return await self._chat(msg)
            case ChatStream():
                return self._stream(msg)
            case GetUsage():
                return UsageReport(
                    self.tracker.total,
                    self.tracker.calls,
                    dict(self.by_provider),
                    self.tracker.last if self.tracker.calls else None,
                    self.tracker.cost,
                )
            case ResetUsage():
                self.tracker.reset()
                self.by_provider.clear()
                return None
            case ListProviders():
                return ProviderList(self.registry.names(), self.registry.default_name)
        raise TypeError(f"ProviderActor cannot handle {type(msg).__name__}")

    async def _chat(self, msg: Chat) -> ChatResponse:
        assert self.client is not None
        name, provider = self.registry.resolve(msg.provider)
        return await self.caller.chat(name, provider, self.client, msg.request)

    def _stream(self, msg: ChatStream) -> AsyncGenerator[StreamEvent, None]:
        # The runtime iterates (and closes) the generator inside this request.
        assert self.client is not None
        name, provider = self.registry.resolve(msg.provider)
        return self.caller.stream(name, provider, self.client, msg.request)


@functools.cache
def _with_limit(limit: int) -> type[ProviderActor]:
    return type(f"ProviderActor{limit}", (ProviderActor,), {"max_concurrency": limit})


def provider_actor(
    registry: ProviderRegistry, *, max_in_flight: int = 16, **options: Any
) -> Callable[[], ProviderActor]:
    """A factory for ``system.spawn`` / ``ChildSpec``: a ProviderActor that runs at
    most ``max_in_flight`` (>= 2) requests at once; ``options`` go to its ``__init__``."""
    if max_in_flight < 2:
        raise ValueError("max_in_flight must be >= 2 (a ProviderActor is concurrent)")
    cls = _with_limit(max_in_flight)
    return lambda: cls(registry, **options)
