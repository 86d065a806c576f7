"""Several SessionHosts on one shared store in one trio run: each host in an actor
system of its own (as on its own machine), reaching the store's actor through a link
that a test can pause (a stalled or cut-off host: its requests wait, as on a network
that holds them) and that counts what it lets through."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from agcore_actors import ActorRef, ActorSystem, AgcoreError
from agcore_actors.actor import Actor
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.cluster import ClusterConfig, LeaseKeeper
from agcore_actors.llm import ProviderRegistry, RetryConfig, provider_actor
from agcore_actors.store import InMemorySessions, SessionBackendConfig, session_store_spec
from agcore_actors.testing import ScriptedProvider
from tests.agent.fakes import echo

#: Lease timing of the tests (the defaults): self-fence 8 s after a renewal was sent.
TTL, RENEW, MARGIN = 10.0, 2.0, 2.0


@attrs.define
class Link:
    """A host's way to the store: paused, its requests wait until resumed."""

    host: str
    paused: bool = False
    resumed: trio.Event = attrs.field(factory=trio.Event)
    #: The requests let through, by type name, in order.
    sent: list[str] = attrs.field(factory=list)
    #: Requests whose sender gave up while the link was paused, delivered anyway once
    #: it resumes (as a network delivers what was sent): type name and the store's
    #: answer (``ok`` or the error's kind).
    late: list[tuple[str, str]] = attrs.field(factory=list)
    #: Seconds each request of a type (by name) takes to get through (a slow store).
    delays: dict[str, float] = attrs.field(factory=dict)

    def pause(self) -> None:
        self.paused = True
        self.resumed = trio.Event()

    def resume(self) -> None:
        self.paused = False
        self.resumed.set()


class StoreLink(Actor[Any]):
    """Forwards every request to the store as it is (its error too), once the link is
    not paused; a write whose sender gives up while it waits is still delivered."""

    max_concurrency = 100_000
    expected_errors = (AgcoreError,)
    background_tasks = True

    def __init__(self, store: ActorRef[Any], link: Link) -> None:
        self.store = store
        self.link = link

    async def handle(self, msg: Any) -> Any:
        try:
            # Delayed, then held by a pause that began meanwhile (a request in transit).
            await trio.sleep(self.link.delays.get(type(msg).__name__, 0.0))
            while self.link.paused:
                await self.link.resumed.wait()
        except trio.Cancelled:
            if getattr(msg, "fence", None) is not None:
                self.ctx.nursery.start_soon(self._late, msg)
            raise
        self.link.sent.append(type(msg).__name__)
        return await self.store.ask(msg)

    async def _late(self, msg: Any) -> None:
        while self.link.paused:
            await self.link.resumed.wait()
        name = type(msg).__name__
        self.link.sent.append(name)
        try:
            await self.store.ask(msg)
        except AgcoreError as exc:
            self.link.late.append((name, exc.kind))
        else:
            self.link.late.append((name, "ok"))


@attrs.frozen
class Node:
    """One host of the cluster under test."""

    host: SessionHost
    keeper: LeaseKeeper
    link: Link
    system: ActorSystem

    @property
    def id(self) -> str:
        return self.keeper.host


def fast_clock(rate: float) -> Callable[[], float]:
    """A clock running ``rate`` times as fast as trio's (a store whose clock is ahead)."""
    return functools.partial(_scaled, rate)


def _scaled(rate: float) -> float:
    return rate * trio.current_time()


async def start_store(
    system: ActorSystem,
    clock: Callable[[], float] = trio.current_time,
    backend: SessionBackendConfig | None = None,
) -> ActorRef[Any]:
    """The shared SessionStore (default: in memory), on trio's clock (virtual time in a
    test with a MockClock)."""
    spec = session_store_spec("store", backend=backend or InMemorySessions(), clock=clock)
    return await system.root.start_child(spec)


@asynccontextmanager
async def node(
    store: ActorRef[Any],
    host_id: str,
    *,
    model: ScriptedProvider | None = None,
    host_config: HostConfig | None = None,
    **cluster: Any,
) -> AsyncIterator[Node]:
    """A clustered host ``host_id`` (address ``http://<id>.test``) over ``store``."""
    async with ActorSystem(strict=True, seed=0) as system:
        link = Link(host_id)
        proxy = await system.spawn(functools.partial(StoreLink, store, link), name="store-link")
        registry = ProviderRegistry().register(model or echo(1.0))
        llm = await system.spawn(
            provider_actor(registry, retry=RetryConfig(max_retries=0)), name="llm"
        )
        bundle = (
            AgentBuilder().provider(llm).store(StoreTurns(proxy)).agent(Agent(name="a")).build()
        )
        settings = {"lease_ttl": TTL, "renew_interval": RENEW, "fence_margin": MARGIN, **cluster}
        config = ClusterConfig(host_id=host_id, address=f"http://{host_id}.test", **settings)
        keeper = LeaseKeeper(proxy, config)
        async with SessionHost(system, bundle, host_config, cluster=keeper) as host:
            yield Node(host, keeper, link, system)
