"""The MemoryStore actor: a serial actor that owns one store.

::

    spec = memory_store_spec("memory", config=MemoryStoreConfig(path="memory.db"))
    memory = await system.root.start_child(spec)
    await memory.ask(Append("s1", [ChatMessage(role="user", content="hi")]))
    result = await memory.ask(Retrieve(query="LangGraph state"))

The protocol is :mod:`agcore_actors.memory.messages`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar, assert_never

import attrs
import trio

from ..actor import Actor, ChildSpec
from ._conversation import ConversationMemory, ConversationMemoryConfig
from ._errors import InvalidInput, NotFound, RetrievalError, SerializationError
from ._eviction import EvictionConfig, can_evict
from ._facts import FactMemory
from ._inmemory import InMemoryBackend
from ._item import KnowledgePage, MemoryItem, RetrievalResult
from ._knowledge import KnowledgeStore
from ._retriever import MemoryRetriever, RetrieverConfig
from ._sqlite import SqliteBackend
from ._store import Clock, MemoryBackend
from .messages import (
    Append,
    ClearHistory,
    Count,
    Delete,
    DeletePage,
    Evict,
    ExportTranscript,
    FactClear,
    FactGet,
    FactRemove,
    FactSet,
    FactSnapshot,
    Get,
    GetPage,
    History,
    ImportTranscript,
    IndexEntries,
    Items,
    List,
    MemoryMsg,
    MemoryReply,
    Messages,
    PageIndex,
    Pages,
    Pin,
    Put,
    PutPage,
    ReplaceHistory,
    Retrieve,
    SearchPages,
    UpdatePage,
)

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class MemoryStoreConfig:
    """What a MemoryStore actor opens and how it behaves."""

    #: The SQLite file (created if missing); None: an in-memory store.
    path: str | None = None
    #: The eviction policy and its sweeps.
    eviction: EvictionConfig = attrs.field(factory=EvictionConfig)
    #: Retrieval defaults (a ``Retrieve`` may override three of them).
    retriever: RetrieverConfig = attrs.field(factory=RetrieverConfig)
    #: How each session's transcript is bounded.
    conversation: ConversationMemoryConfig = attrs.field(factory=ConversationMemoryConfig)
    #: SQLite's durability level (see ``SqliteBackend``).
    synchronous: Literal["FULL", "NORMAL"] = attrs.field(
        default="FULL", validator=attrs.validators.in_(("FULL", "NORMAL"))
    )


class MemoryStore(Actor[MemoryMsg]):
    """Serial actor owning one store.

    Semantics:
        One message at a time touches the store, in mailbox order. The SQLite
        backend's calls run in a trio worker thread behind a one-slot limiter,
        so the event loop never blocks on disk; the in-memory backend runs
        inline.

    Clock:
        ``clock`` gives Unix seconds for ``created_at`` and TTLs. The actor reads
        it on the event loop once per message, and the store sees that value for
        the whole message.

    Eviction:
        Besides the store's per-write rules, a background task sweeps every
        ``eviction.sweep_interval`` seconds of trio time (when the policy can
        evict anything), so TTL-expired rows leave the file even when no one
        writes. The sweep takes the store's limiter like any message.

    Cancellation:
        A handler waiting on a worker thread is not abandoned: the cancellation
        takes effect when the store call returns, so a write is either committed
        or never started, never half-applied.

    Errors:
        :class:`InvalidInput`, :class:`NotFound`, :class:`SerializationError` and
        :class:`RetrievalError` go to the asker; anything else (a
        :class:`StorageError`) crashes the actor and its supervisor reopens the
        store.
    """

    expected_errors = (InvalidInput, NotFound, SerializationError, RetrievalError)
    background_tasks = True

    def __init__(
        self, config: MemoryStoreConfig | None = None, *, clock: Clock = time.time
    ) -> None:
        self.config = config or MemoryStoreConfig()
        self._clock = clock
        self._now = 0.0
        self._store: MemoryBackend | None = None
        self._threaded = self.config.path is not None
        self._limiter = trio.CapacityLimiter(1)

    @property
    def store(self) -> MemoryBackend:
        assert self._store is not None, "the store is open between on_start and on_stop"
        return self._store

    def _frozen_clock(self) -> float:
        return self._now

    async def _run(self, fn: Callable[[], T]) -> T:
        # The clock is read here, on the event loop, once per call: every
        # timestamp of one message agrees, and a clock built on trio's (as in
        # tests on virtual time) works although the store runs in a thread.
        self._now = self._clock()
        if self._threaded:
            return await trio.to_thread.run_sync(fn, limiter=self._limiter)
        return fn()

    async def _write(self, fn: Callable[[MemoryBackend], T]) -> T:
        """Run a write against the store (one transaction per call)."""
        store = self.store
        return await self._run(lambda: fn(store))

    async def _read(self, fn: Callable[[MemoryBackend], T]) -> T:
        """Run a read against the store."""
        store = self.store
        return await self._run(lambda: fn(store))

    async def on_start(self) -> None:
        cfg = self.config
        if cfg.path is None:
            self._store = InMemoryBackend(cfg.eviction, clock=self._frozen_clock)
        else:
            self._store = await self._run(self._open_sqlite)
        interval = cfg.eviction.sweep_interval
        if interval is not None and can_evict(cfg.eviction.policy):
            self.ctx.nursery.start_soon(self._sweep_loop, interval)

    def _open_sqlite(self) -> SqliteBackend:
        cfg = self.config
        assert cfg.path is not None
        return SqliteBackend(
            cfg.path, cfg.eviction, clock=self._frozen_clock, synchronous=cfg.synchronous
        )

    async def _sweep_loop(self, interval: float) -> None:
        while True:
            await trio.sleep(interval)
            # Serialised with the messages by the store's limiter (or, inline,
            # by running between two of them).
            await self._run(self.store.evict)

    async def on_stop(self, reason: BaseException | None) -> None:
        store, self._store = self._store, None
        if store is not None:
            await self._run(store.close)

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
            case Append():
                return await self._on_append(msg)
            case History():
                return await self._on_history(msg)
            case ReplaceHistory():
                await self._on_replace_history(msg)
                return None
            case ClearHistory():
                return await self._on_clear_history(msg)
            case ExportTranscript():
                return await self._on_export_transcript(msg)
            case ImportTranscript():
                return await self._on_import_transcript(msg)
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
            case FactSet():
                await self._on_fact_set(msg)
                return None
            case FactGet():
                return await self._on_fact_get(msg)
            case FactRemove():
                return await self._on_fact_remove(msg)
            case FactClear():
                return await self._on_fact_clear(msg)
            case FactSnapshot():
                return await self._on_fact_snapshot(msg)
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

    # -- conversation ----------------------------------------------------------

    def _conversation(self, store: MemoryBackend, session_id: str) -> ConversationMemory:
        return ConversationMemory(store, session_id, self.config.conversation)

    async def _on_append(self, msg: Append) -> list[int]:
        return await self._write(
            lambda s: self._conversation(s, msg.session_id).extend(msg.messages)
        )

    async def _on_history(self, msg: History) -> Messages:
        return await self._read(lambda s: Messages(self._conversation(s, msg.session_id).history()))

    async def _on_replace_history(self, msg: ReplaceHistory) -> None:
        await self._write(lambda s: self._conversation(s, msg.session_id).replace(msg.messages))

    async def _on_clear_history(self, msg: ClearHistory) -> int:
        return await self._write(lambda s: self._conversation(s, msg.session_id).clear())

    async def _on_export_transcript(self, msg: ExportTranscript) -> str:
        return await self._read(lambda s: self._conversation(s, msg.session_id).export_jsonl())

    async def _on_import_transcript(self, msg: ImportTranscript) -> int:
        return await self._write(
            lambda s: self._conversation(s, msg.session_id).import_jsonl(
                msg.jsonl, replace=msg.replace
            )
        )

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
        return await self._read(lambda s: MemoryRetriever(s, cfg).retrieve(msg.query))

    # -- facts -----------------------------------------------------------------

    async def _on_fact_set(self, msg: FactSet) -> None:
        await self._write(lambda s: FactMemory(s, msg.session_id).set(msg.key, msg.value))

    async def _on_fact_get(self, msg: FactGet) -> str | None:
        return await self._read(lambda s: FactMemory(s, msg.session_id).get(msg.key))

    async def _on_fact_remove(self, msg: FactRemove) -> bool:
        return await self._write(lambda s: FactMemory(s, msg.session_id).remove(msg.key))

    async def _on_fact_clear(self, msg: FactClear) -> int:
        return await self._write(lambda s: FactMemory(s, msg.session_id).clear())

    async def _on_fact_snapshot(self, msg: FactSnapshot) -> str:
        return await self._read(lambda s: FactMemory(s, msg.session_id).snapshot())


def memory_store_spec(
    name: str,
    *,
    config: MemoryStoreConfig | None = None,
    clock: Clock = time.time,
    shutdown: float = 5.0,
    mailbox_size: int = 1024,
) -> ChildSpec[MemoryMsg]:
    """A :class:`MemoryStore` child called ``name``: a fresh actor per (re)start."""
    return ChildSpec(
        name,
        _factory(config, clock),
        shutdown=shutdown,
        mailbox_size=mailbox_size,
    )


def _factory(config: MemoryStoreConfig | None, clock: Clock) -> Callable[[], MemoryStore]:
    def make() -> MemoryStore:
        return MemoryStore(config, clock=clock)

    return make
