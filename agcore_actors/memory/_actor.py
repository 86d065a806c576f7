"""The MemoryStore actor: a serial actor that owns one store.

::

    config = MemoryStoreConfig(path="memory.db")          # path=None: in memory
    memory = await system.spawn(memory_store(config), name="memory")
    await memory.ask(Append("s1", [ChatMessage(role="user", content="hi")]))
    result = await memory.ask(Retrieve(query="LangGraph state"))

The protocol is :mod:`agcore_actors.memory.messages`.

How it runs: the actor is serial, so one message at a time touches the store.
The SQLite store's calls run in trio worker threads
(``trio.to_thread.run_sync``) behind a one-slot limiter, so the event loop
never blocks on disk and the store's single connection is used by one thread
at a time. The in-memory store runs inline.

Cancellation: a handler waiting on a worker thread is not abandoned; the
cancellation takes effect when the store call returns, so a write is either
committed or never started, never half-applied.

Clock: ``clock`` gives wall-clock Unix seconds for ``created_at`` and TTLs; the
actor reads it on the event loop once per message and the store sees that
value for the whole message.

Eviction: besides the store's per-write rules, the actor tells itself
:class:`Sweep` every ``eviction.sweep_interval`` seconds of trio time (when the
policy can evict anything), so TTL-expired rows leave the file even when no
one writes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import msgspec
import trio

from ..actor import Actor, ActorStopped, MailboxFull
from ._conversation import ConversationMemory, ConversationMemoryConfig
from ._errors import InvalidInput, NotFound, RetrievalError, SerializationError
from ._eviction import EvictionConfig, NoEviction
from ._facts import FactMemory
from ._knowledge import KnowledgeStore
from ._retriever import MemoryRetriever, RetrieverConfig
from ._sqlite import SqliteBackend
from ._store import Clock, InMemoryBackend, MemoryBackend
from ._transcript import messages_from_jsonl, messages_to_jsonl
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
    Messages,
    PageIndex,
    Pages,
    Pin,
    Put,
    PutPage,
    ReplaceHistory,
    Retrieve,
    SearchPages,
    Sweep,
    UpdatePage,
)

T = TypeVar("T")


class MemoryStoreConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What a MemoryStore actor opens and how it behaves.

    ``path`` None gives an in-memory store; otherwise the SQLite file (created
    if missing). ``synchronous`` is SQLite's durability level (see
    ``SqliteBackend``).
    """

    path: str | None = None
    eviction: EvictionConfig = EvictionConfig()
    retriever: RetrieverConfig = RetrieverConfig()
    conversation: ConversationMemoryConfig = ConversationMemoryConfig()
    synchronous: Literal["FULL", "NORMAL"] = "FULL"


class MemoryStore(Actor[MemoryMsg]):
    """Serial actor owning one store (see the module doc)."""

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

    async def on_start(self) -> None:
        cfg = self.config
        if cfg.path is None:
            self._store = InMemoryBackend(cfg.eviction, clock=self._frozen_clock)
        else:
            path = cfg.path
            self._store = await self._run(
                lambda: SqliteBackend(
                    path, cfg.eviction, clock=self._frozen_clock, synchronous=cfg.synchronous
                )
            )
        interval = cfg.eviction.sweep_interval
        if interval is not None and not isinstance(cfg.eviction.policy, NoEviction):
            self.ctx.nursery.start_soon(self._sweep_loop, interval)

    async def _sweep_loop(self, interval: float) -> None:
        while True:
            await trio.sleep(interval)
            # Through the mailbox, so that the sweep is serialised with every
            # other use of the store; a full mailbox skips one sweep.
            with contextlib.suppress(MailboxFull, ActorStopped):
                self.ctx.self_ref.tell_nowait(Sweep())

    async def on_stop(self, reason: BaseException | None) -> None:
        store, self._store = self._store, None
        if store is not None:
            await self._run(store.close)

    async def handle(self, msg: MemoryMsg) -> Any:
        return await self._run(lambda: self._apply(msg))

    def _apply(self, msg: MemoryMsg) -> Any:
        """The synchronous work for one message (runs in the store's thread)."""
        store = self.store
        match msg:
            case Put(id=id, content=content, metadata=metadata, created_at=at, pinned=pinned):
                return store.put(id, content, metadata, created_at=at, pinned=pinned)
            case Get(id=id):
                return store.get(id)
            case Delete(id=id):
                return store.delete(id)
            case List(filter=flt):
                return Items(store.list(flt))
            case Count(prefix=prefix):
                return store.count(prefix)
            case Pin(id=id, pinned=pinned):
                return store.set_pinned(id, pinned)
            case Evict() | Sweep():
                return store.evict()
            case Append(session_id=sid, messages=messages):
                return self._conversation(sid).extend(messages)
            case History(session_id=sid):
                return Messages(self._conversation(sid).history())
            case ReplaceHistory(session_id=sid, messages=messages):
                self._conversation(sid).replace(messages)
                return None
            case ClearHistory(session_id=sid):
                return self._conversation(sid).clear()
            case ExportTranscript(session_id=sid):
                return messages_to_jsonl(self._conversation(sid).history())
            case ImportTranscript(session_id=sid, jsonl=jsonl, replace=replace):
                messages = messages_from_jsonl(jsonl)  # all parsed before anything is written
                conv = self._conversation(sid)
                if replace:
                    conv.replace(messages)
                else:
                    conv.extend(messages)
                return len(messages)
            case PutPage(page=page):
                return KnowledgeStore(store).add_page(page)
            case UpdatePage(page=page):
                return KnowledgeStore(store).update_page(page)
            case GetPage(id=id):
                return KnowledgeStore(store).get_page(id)
            case DeletePage(id=id):
                return KnowledgeStore(store).delete_page(id)
            case SearchPages(query=query):
                return Pages(KnowledgeStore(store).search(query))
            case PageIndex():
                return IndexEntries(KnowledgeStore(store).get_index())
            case Retrieve(query=query, max_results=n, min_score=min_score, mode=mode):
                return self._retrieve(query, n, min_score, mode)
            case FactSet(session_id=sid, key=key, value=value):
                FactMemory(store, sid).set(key, value)
                return None
            case FactGet(session_id=sid, key=key):
                return FactMemory(store, sid).get(key)
            case FactRemove(session_id=sid, key=key):
                return FactMemory(store, sid).remove(key)
            case FactClear(session_id=sid):
                return FactMemory(store, sid).clear()
            case FactSnapshot(session_id=sid):
                return FactMemory(store, sid).snapshot()
        raise InvalidInput(f"not a memory message: {type(msg).__name__}")

    def _conversation(self, session_id: str) -> ConversationMemory:
        return ConversationMemory(self.store, session_id, self.config.conversation)

    def _retrieve(self, query: str, n: int | None, min_score: float | None, mode: Any) -> Any:
        base = self.config.retriever
        try:
            cfg = msgspec.structs.replace(
                base,
                max_results=base.max_results if n is None else n,
                min_score=base.min_score if min_score is None else min_score,
                mode=base.mode if mode is None else mode,
            )
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        return MemoryRetriever(self.store, cfg).retrieve(query)


def memory_store(
    config: MemoryStoreConfig | None = None, *, clock: Clock = time.time
) -> Callable[[], MemoryStore]:
    """A factory for ``system.spawn`` / ``ChildSpec``: a fresh actor per start."""
    return lambda: MemoryStore(config, clock=clock)
