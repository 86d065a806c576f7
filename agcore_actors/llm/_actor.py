"""ProviderActor: the LLM providers behind one concurrent actor, and its spec.

::

    spec = provider_spec("llm", registry=registry, config=ProviderConfig(retry=RetryConfig()))
    llm = await system.root.start_child(spec)
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, assert_never

import attrs

from ..actor import DEFAULT_ISOLATION, Actor, ChildSpec, CircuitBreaker, Restart
from ._call import Caller
from ._errors import LlmError
from ._hooks import HookExecutor
from ._http import default_client
from ._provider import ProviderRegistry, output_mode_of
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

if TYPE_CHECKING:
    import httpx2

ClientFactory = Callable[[], "httpx2.AsyncClient"]
ProviderReply = ChatResponse | AsyncGenerator[StreamEvent, None] | UsageReport | ProviderList | None

#: Requests a ProviderActor runs at once unless told otherwise: as many turns as a
#: SessionHost runs at once by default (its ``max_turns_in_flight``), so their model
#: calls never queue behind a limit of the provider's own.
DEFAULT_MAX_CONCURRENCY = 256


@attrs.frozen
class ProviderConfig:
    """How a :class:`ProviderActor` calls its providers."""

    #: When and how long to retry a failed call.
    retry: RetryConfig = attrs.field(factory=RetryConfig)
    #: Time limits of one call.
    timeouts: Timeouts = attrs.field(factory=Timeouts)
    #: Prices for the cost in usage reports (None: cost 0).
    pricing: Pricing | None = None
    #: Seed of the backoff jitter (None: unpredictable).
    seed: int | None = None


class ProviderActor(Actor[ProviderMsg]):
    """The providers of a :class:`ProviderRegistry` behind one actor.

    Semantics:
        Serves :mod:`agcore_actors.llm.messages`. Owns the HTTP client (made in
        ``on_start``, closed in ``on_stop``; its pool is sized to the concurrency),
        runs every call through the one retry loop (:class:`Caller`) and accounts
        usage per provider. Each request runs in its own task; at most
        ``max_concurrency`` run at once (set it with :func:`provider_spec`), further
        requests wait in the bounded mailbox.

    Cancellation:
        An asker that is cancelled, times out, or leaves its stream early cancels
        its request; the HTTP response is closed before the cancellation completes,
        and no hook fires.

    Errors:
        Every :class:`LlmError` is an expected error: it goes to the asker (or is
        raised from the stream's iteration) and the actor keeps running. A hook
        that raises, or a provider bug, crashes the actor: the asker whose call
        raised gets that exception, the others in flight ``ActorCrashed``, and its
        supervisor restarts it. :func:`provider_spec` isolates it (``isolate``): an
        actor that keeps crashing is parked, every ask failing at once with
        ``ActorParked``, and tried again later; it never makes its supervisor give
        up.
    """

    max_concurrency = DEFAULT_MAX_CONCURRENCY
    expected_errors = (LlmError,)

    def __init__(
        self,
        registry: ProviderRegistry,
        config: ProviderConfig | None = None,
        *,
        hooks: HookExecutor | None = None,
        client_factory: ClientFactory | None = None,
    ) -> None:
        config = config or ProviderConfig()
        self.registry = registry
        self.config = config
        self.timeouts = config.timeouts
        self.tracker = CostTracker(config.pricing)
        self.by_provider: dict[str, Usage] = {}
        self.caller = Caller(
            config.retry,
            config.timeouts,
            hooks or HookExecutor(),
            random.Random(config.seed),
            self._account,
        )
        self._client_factory = client_factory
        self.client: httpx2.AsyncClient | None = None

    def _account(self, provider: str, usage: Usage) -> None:
        self.tracker.add(usage)
        self.by_provider[provider] = self.by_provider.get(provider, Usage()) + usage

    async def on_start(self) -> None:
        factory = self._client_factory
        if factory is not None:
            self.client = factory()
        else:
            self.client = default_client(self.timeouts.connect, self.max_concurrency)

    async def on_stop(self, reason: BaseException | None) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    async def handle(self, msg: ProviderMsg) -> ProviderReply:
        match msg:
            case Chat():
                return await self._on_chat(msg)
            case ChatStream():
                return self._on_chat_stream(msg)
            case GetUsage():
                return self._on_get_usage(msg)
            case ResetUsage():
                self._on_reset_usage(msg)
            case ListProviders():
                return self._on_list_providers(msg)
            case _:
                assert_never(msg)
        return None

    def _on_chat(self, msg: Chat) -> Coroutine[Any, Any, ChatResponse]:
        # The call's own coroutine, awaited by handle (no frame of ours on every resume).
        assert self.client is not None
        name, provider = self.registry.resolve(msg.provider)
        return self.caller.chat(name, provider, self.client, msg.request)

    def _on_chat_stream(self, msg: ChatStream) -> AsyncGenerator[StreamEvent, None]:
        # The runtime iterates (and closes) the generator inside this request.
        assert self.client is not None
        name, provider = self.registry.resolve(msg.provider)
        return self.caller.stream(name, provider, self.client, msg.request)

    def _on_get_usage(self, msg: GetUsage) -> UsageReport:
        return UsageReport(
            total=self.tracker.total,
            calls=self.tracker.calls,
            by_provider=dict(self.by_provider),
            last=self.tracker.last if self.tracker.calls else None,
            cost=self.tracker.cost,
        )

    def _on_reset_usage(self, msg: ResetUsage) -> None:
        self.tracker.reset()
        self.by_provider.clear()

    def _on_list_providers(self, msg: ListProviders) -> ProviderList:
        registry = self.registry
        names = registry.names()
        modes: dict[str, str] = {n: output_mode_of(registry.get(n)) for n in names}
        return ProviderList(names, registry.default_name, modes)


@functools.cache
def _with_limit(limit: int) -> type[ProviderActor]:
    # Until ChildSpec takes a max_concurrency of its own: one subclass per limit.
    return type(f"ProviderActor{limit}", (ProviderActor,), {"max_concurrency": limit})


def _check_concurrency(max_concurrency: int) -> None:
    if max_concurrency < 2:
        raise ValueError("max_concurrency must be >= 2 (a ProviderActor is concurrent)")


def provider_spec(
    name: str,
    *,
    registry: ProviderRegistry,
    config: ProviderConfig | None = None,
    hooks: HookExecutor | None = None,
    client_factory: ClientFactory | None = None,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    restart: Restart = Restart.PERMANENT,
    shutdown: float = 5.0,
    mailbox_size: int = 1024,
    isolate: CircuitBreaker | None = DEFAULT_ISOLATION,
) -> ChildSpec[ProviderMsg]:
    """A child spec of a :class:`ProviderActor` named ``name`` that runs at most
    ``max_concurrency`` (>= 2) requests at once; each (re)start gets a fresh
    instance (and HTTP client). ``isolate`` parks an actor that keeps crashing
    (a provider bug) instead of letting it use up its supervisor's restart
    intensity (see :class:`~agcore_actors.actor.ChildSpec`; None: plain OTP
    restarts). Raises ``ValueError`` for a bad limit."""
    _check_concurrency(max_concurrency)
    factory = functools.partial(
        _with_limit(max_concurrency),
        registry,
        config,
        hooks=hooks,
        client_factory=client_factory,
    )
    return ChildSpec(
        name,
        factory,
        restart=restart,
        shutdown=shutdown,
        mailbox_size=mailbox_size,
        isolate=isolate,
    )


def provider_actor(
    registry: ProviderRegistry, *, max_in_flight: int = DEFAULT_MAX_CONCURRENCY, **options: Any
) -> Callable[[], ProviderActor]:
    """A factory for ``system.spawn``: a ProviderActor that runs at most
    ``max_in_flight`` (>= 2) requests at once. ``options`` are ``hooks``,
    ``client_factory`` and the fields of :class:`ProviderConfig` (prefer
    :func:`provider_spec`)."""
    _check_concurrency(max_in_flight)
    hooks = options.pop("hooks", None)
    client_factory = options.pop("client_factory", None)
    config = ProviderConfig(**options)
    return functools.partial(
        _with_limit(max_in_flight), registry, config, hooks=hooks, client_factory=client_factory
    )
