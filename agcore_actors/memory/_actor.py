"""The MemoryStore actor: a concurrent actor that owns one store (one writer, many readers).

::

    spec = memory_store_spec("memory", config=MemoryStoreConfig(path="memory.db"))
    await system.start_supervisor(SupervisorSpec("memory-supervisor", children=[spec]))
    memory = system.lookup("memory")
    await memory.ask(Put(id="note:tea", content="Ana drinks green tea"))
    result = await memory.ask(Retrieve(query="LangGraph state"))

The protocol is :mod:`agcore_actors.memory.messages`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar, assert_never

import attrs
import trio

from ..actor import DEFAULT_ISOLATION, Actor, ChildSpec, CircuitBreaker
from ._config import MemoryStoreConfig
from ._errors import (
    InvalidInput,
    NotFound,
    RetrievalError,
    SerializationError,
    StorageBusy,
    StorageUnavailable,
)
from ._eviction import can_evict
from ._item import KnowledgePage, MemoryItem, RetrievalResult
from ._knowledge import KnowledgeStore
from ._memories import Memories
from ._retriever import MemoryRetriever
from ._runner import StoreRunner, TrioWallClock
from ._store import Clock, MemoryBackend
from .messages import (
    Count,
    Delete,
    DeletePage,
    Evict,
    Forget,
    Get,
    GetMemoryStatus,
    GetPage,
    IndexEntries,
    Items,
    List,
    ListMemories,
    MemoryMsg,
    MemoryReply,
    PageIndex,
    Pages,
    Pin,
    Put,
    PutPage,
    Recall,
    Recalled,
    RecalledMemory,
    Remember,
    Retrieve,
    SearchPages,
    UpdatePage,
)

T = TypeVar("T")


class MemoryStore(Actor[MemoryMsg]):
    """Concurrent actor owning one store.

    Semantics:
        Requests are taken in mailbox order and run concurrently (up to
        :attr:`MemoryStore.max_concurrency` in flight). Writes are applied one at
        a time, each in its own transaction, in the order they were taken. On
        SQLite, reads run on read connections of their own, so a read never
        waits for a write in progress or queued: it sees every write answered
        before it was sent, and never part of a write. Requests in flight at the
        same moment have no order between them: wait for a reply before sending
        a request that depends on it. The SQLite backend's calls run in trio
        worker threads, so the event loop never blocks on disk; the in-memory
        backend runs each call inline and whole, in mailbox order (see
        ``_runner``).

    Clock:
        ``clock`` gives Unix seconds for ``created_at`` and TTLs (by default the
        wall time at start plus trio's time since: virtual under a virtual
        clock). It is read on the event loop once per message, and the store
        sees that value for the whole message.

    Eviction:
        Besides the store's per-write rules, a background task sweeps every
        ``eviction.sweep_interval`` seconds of trio time (when the policy can
        evict anything), so TTL-expired rows leave the file even when no one
        writes. The sweep takes the store's write limiter like any message.

    Cancellation:
        A write is never abandoned: an asker cancelled while its write waits
        for its turn withdraws it; once it runs, the cancellation takes effect
        when the transaction ends. So a write is committed or never started.
        A read is abandoned at once: its thread finishes on its own connection
        in the background, holding up no one.

    Errors:
        :class:`InvalidInput`, :class:`NotFound`, :class:`SerializationError`,
        :class:`RetrievalError`, :class:`StorageBusy` and
        :class:`StorageUnavailable` go to the asker and the actor carries on
        (degraded after a StorageUnavailable, until a write succeeds: shown by
        ``GetMemoryStatus`` and, as the row's ``degraded`` reason, by
        ``ActorSystem.snapshot()``). Any other :class:`StorageError` crashes the actor
        (the asker gets it) and its supervisor reopens the store. A store that keeps
        crashing (an error on every write) is isolated by :func:`memory_store_spec`:
        parked, every request failing at once with ``ActorParked``, then reopened
        and tried again; it never uses up its supervisor's restart intensity.
    """

    expected_errors = (
        InvalidInput,
        NotFound,
        SerializationError,
        RetrievalError,
        StorageBusy,
        StorageUnavailable,
    )
    background_tasks = True
    #: Requests in flight at once (reads run, writes wait for their turn); more
    #: wait in the mailbox.
    max_concurrency = 1024

    def __init__(
        self, config: MemoryStoreConfig | None = None, *, clock: Clock | None = None
    ) -> None:
        self.config = config or MemoryStoreConfig()
        self._runner = StoreRunner(self.config, clock or TrioWallClock())
        self._write = self._runner.write
        self._read = self._runner.read

    async def on_start(self) -> None:
        await self._runner.open(self.ctx.nursery, self.ctx.set_degraded)
        eviction = self.config.eviction
        if eviction.sweep_interval is not None and can_evict(eviction.policy):
            self.ctx.nursery.start_soon(self._sweep_loop, eviction.sweep_interval)

    async def _sweep_loop(self, interval: float) -> None:
        while True:
            await trio.sleep(interval)
            # A sweep that cannot write now is skipped: the next one tries again,
            # and the runner reports the store degraded meanwhile.
            with contextlib.suppress(StorageBusy, StorageUnavailable):
                await self._write(lambda s: s.evict())

    async def on_stop(self, reason: BaseException | None) -> None:
        await self._runner.close()

    async def handle(self, msg: MemoryMsg) -> MemoryReply:
        match msg:
            case Put():
                return await self._on_put(msg)
            case Get():
                return await self._on_get(msg)
            case Delete():
                return await self._on_delete(msg)
            case List():
                return await self._on_list(msg)
            case Count():
                return await self._on_count(msg)
            case Pin():
                return await self._on_pin(msg)
            case Evict():
                return await self._on_evict(msg)
            case Remember():
                return await self._on_remember(msg)
            case Recall():
                return await self._on_recall(msg)
            case Forget():
                return await self._on_forget(msg)
            case ListMemories():
                return await self._read(lambda s: Items(Memories(s).list(msg.scope)))
            case PutPage():
                return await self._on_put_page(msg)
            case UpdatePage():
                return await self._on_update_page(msg)
            case GetPage():
                return await self._on_get_page(msg)
            case DeletePage():
                return await self._on_delete_page(msg)
            case SearchPages():
                return await self._on_search_pages(msg)
            case PageIndex():
                return await self._on_page_index(msg)
            case Retrieve():
                return await self._on_retrieve(msg)
            case GetMemoryStatus():
                return self._runner.status()
            case _:
                assert_never(msg)

    # -- items -----------------------------------------------------------------

    async def _on_put(self, msg: Put) -> MemoryItem:
        return await self._write(
            lambda s: s.put(
                msg.id, msg.content, msg.metadata, created_at=msg.created_at, pinned=msg.pinned
            )
        )

    async def _on_get(self, msg: Get) -> MemoryItem | None:
        return await self._read(lambda s: s.get(msg.id))

    async def _on_delete(self, msg: Delete) -> bool:
        return await self._write(lambda s: s.delete(msg.id))

    async def _on_list(self, msg: List) -> Items:
        return await self._read(lambda s: Items(s.list(msg.filter)))

    async def _on_count(self, msg: Count) -> int:
        return await self._read(lambda s: s.count(msg.prefix))

    async def _on_pin(self, msg: Pin) -> MemoryItem:
        return await self._write(lambda s: s.set_pinned(msg.id, msg.pinned))

    async def _on_evict(self, msg: Evict) -> list[str]:
        return await self._write(lambda s: s.evict())

    # -- long-term memories ----------------------------------------------------

    async def _on_remember(self, msg: Remember) -> MemoryItem:
        return await self._write(
            lambda s: Memories(s).remember(msg.scope, msg.text, tags=msg.tags, pinned=msg.pinned)
        )

    async def _on_recall(self, msg: Recall) -> Recalled:
        def recall(store: MemoryBackend) -> Recalled:
            found = Memories(store).recall(msg.scope, msg.query, max_results=msg.max_results)
            return Recalled(
                [
                    RecalledMemory(
                        id=item.id,
                        text=item.content,
                        tags=list(item.metadata.get("tags") or []),
                        created_at=item.created_at,
                        score=round(score, 4),
                    )
                    for item, score in found
                ]
            )

        return await self._read(recall)

    async def _on_forget(self, msg: Forget) -> bool:
        return await self._write(lambda s: Memories(s).forget(msg.scope, msg.id))

    # -- knowledge -------------------------------------------------------------

    async def _on_put_page(self, msg: PutPage) -> KnowledgePage:
        return await self._write(lambda s: KnowledgeStore(s).add_page(msg.page))

    async def _on_update_page(self, msg: UpdatePage) -> KnowledgePage:
        return await self._write(lambda s: KnowledgeStore(s).update_page(msg.page))

    async def _on_get_page(self, msg: GetPage) -> KnowledgePage | None:
        return await self._read(lambda s: KnowledgeStore(s).get_page(msg.id))

    async def _on_delete_page(self, msg: DeletePage) -> bool:
        return await self._write(lambda s: KnowledgeStore(s).delete_page(msg.id))

    async def _on_search_pages(self, msg: SearchPages) -> Pages:
        return await self._read(lambda s: Pages(KnowledgeStore(s).search(msg.query)))

    async def _on_page_index(self, msg: PageIndex) -> IndexEntries:
        return await self._read(lambda s: IndexEntries(KnowledgeStore(s).get_index()))

    async def _on_retrieve(self, msg: Retrieve) -> RetrievalResult:
        base = self.config.retriever
        try:
            cfg = attrs.evolve(
                base,
                max_results=base.max_results if msg.max_results is None else msg.max_results,
                min_score=base.min_score if msg.min_score is None else msg.min_score,
                mode=base.mode if msg.mode is None else msg.mode,
            )
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        embedder = self.config.embedder
        return await self._read(
            lambda s: MemoryRetriever(s, cfg, embedder=embedder).retrieve(msg.query)
        )


def memory_store_spec(
    name: str,
    *,
    config: MemoryStoreConfig | None = None,
    clock: Clock | None = None,
    shutdown: float = 5.0,
    mailbox_size: int = 1024,
    start_timeout: float = 30.0,
    isolate: CircuitBreaker | None = DEFAULT_ISOLATION,
) -> ChildSpec[MemoryMsg]:
    """A :class:`MemoryStore` child called ``name``: a fresh actor per (re)start.

    Every incarnation shares one clock (by default a :class:`TrioWallClock`), so
    timestamps stay monotonic across restarts. ``start_timeout`` bounds the
    opening of the store (see :class:`ChildSpec`); on a virtual clock that jumps
    while threads work (``autojump_threshold=0``), pass ``math.inf``. ``isolate``
    parks a store that keeps crashing or failing to open (asks fail at once with
    ``ActorParked``) and tries it again later, so that it never exhausts the restart
    intensity of its siblings (see :class:`~agcore_actors.actor.ChildSpec`; None:
    plain OTP restarts).
    """
    return ChildSpec(
        name,
        _factory(config, clock or TrioWallClock()),
        shutdown=shutdown,
        mailbox_size=mailbox_size,
        start_timeout=start_timeout,
        isolate=isolate,
    )


def _factory(config: MemoryStoreConfig | None, clock: Clock) -> Callable[[], MemoryStore]:
    def make() -> MemoryStore:
        return MemoryStore(config, clock=clock)

    return make
