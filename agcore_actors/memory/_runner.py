"""How the MemoryStore actor runs its backend's calls, and what it knows of its health.

- The SQLite and PostgreSQL backends' calls run in trio worker threads, so the event
  loop never blocks on disk or network; the in-memory backend's run inline, each call
  whole.
- Writes go one at a time, in the order :meth:`StoreRunner.write` is called (a
  strict FIFO lane: the backend has one write connection), and are never
  abandoned: an asker cancelled while its write waits for the lane withdraws it;
  once the write runs, the cancellation waits for the transaction to end. So a
  write is committed or never started, never half-applied.
- Reads run on read-only connections of their own (WAL lets them read while the
  writer writes), up to ``READERS`` at once, and never take the write lane: a
  read does not wait for a write in progress, nor for the writes queued behind
  it. (On PostgreSQL, reads and writes share the backend's one connection, one call
  at a time; the server serialises writes from every host, see ``_postgres``.)
  A SQLite read *is* abandoned: when its asker is cancelled or its ask times out,
  the handler returns at once; the thread finishes in the background and gives
  its connection back, holding up no one.
- The clock is read on the event loop, once per call (for a write, when it
  leaves the lane), and the backend sees that value for the whole call (in its
  thread too): every timestamp of one message agrees, and writes' timestamps
  follow their order. The default clock follows trio's
  (:class:`TrioWallClock`), so under a virtual clock timestamps are virtual too.
- Health: a :class:`StorageUnavailable` (disk full, read-only, I/O error) makes
  the store *degraded* until a write succeeds again; the runner tells ``report``
  (the actor's ``ctx.set_degraded``, so ``ActorSystem.snapshot()`` shows it)
  each time that changes, and :meth:`StoreRunner.status` says it too.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import trio

from .._postgres_url import redact
from ._config import MemoryStoreConfig
from ._errors import StorageBusy, StorageUnavailable
from ._inmemory import InMemoryBackend
from ._postgres import PostgresBackend
from ._sqlite import SqliteBackend
from ._sqlite_reads import SqliteReader
from ._store import Clock, MemoryBackend
from .messages import MemoryStatus

T = TypeVar("T")

#: Read threads (and read connections) at most, abandoned ones included.
READERS = 4
#: Pending statistics beyond this many items are written after a read.
PENDING_LIMIT = 4096

_NOW: contextvars.ContextVar[float] = contextvars.ContextVar("memory_now")


def _now() -> float:
    return _NOW.get()


def _ignore(reason: str | None) -> None:
    pass


class TrioWallClock:
    """Unix seconds that advance with trio's clock: the wall time at the first
    reading, plus the trio time since. Monotonic, and virtual under a virtual
    trio clock. Must be read inside ``trio.run``."""

    def __init__(self) -> None:
        self._offset: float | None = None

    def __call__(self) -> float:
        now = trio.current_time()
        if self._offset is None:
            self._offset = time.time() - now
        return self._offset + now


class StoreRunner:
    """Opens, runs and closes one backend for the actor (see the module doc)."""

    def __init__(self, config: MemoryStoreConfig, clock: Clock) -> None:
        self.config = config
        self._clock = clock
        self._threaded = config.path is not None or config.url is not None
        self._writer = trio.CapacityLimiter(1)
        self._lane = trio.StrictFIFOLock()  # writes, in the order they were asked for
        self._reader = trio.CapacityLimiter(READERS)
        self._free: list[SqliteReader] = []  # idle read connections
        self._pool_lock = threading.Lock()  # the pool is used from threads
        self._closed = False
        self._store: MemoryBackend | None = None
        self._degraded: str | None = None
        self._refused = 0
        #: Told the degraded reason (None: healthy) each time it changes.
        self.report: Callable[[str | None], None] = _ignore
        self._nursery: trio.Nursery | None = None  # for statistics flushes
        self._flushing = False

    @property
    def store(self) -> MemoryBackend:
        assert self._store is not None, "the store is open between open() and close()"
        return self._store

    async def _call(self, fn: Callable[[], T], limiter: trio.CapacityLimiter) -> T:
        _NOW.set(self._clock())  # copied into the worker thread with the context
        if not self._threaded:
            return fn()
        return await trio.to_thread.run_sync(fn, limiter=limiter)

    async def open(
        self, nursery: trio.Nursery, report: Callable[[str | None], None] = _ignore
    ) -> None:
        """Open the backend; background work (statistics flushes) goes to
        ``nursery``, and ``report`` is told each change of health."""
        self._nursery = nursery
        self.report = report
        cfg = self.config
        if cfg.url is not None:
            url = cfg.url

            def open_database() -> PostgresBackend:
                return PostgresBackend(url, cfg.eviction, clock=_now, busy_timeout=cfg.busy_timeout)

            self._store = await self._call(open_database, self._writer)
            return
        if cfg.path is None:
            self._store = InMemoryBackend(cfg.eviction, clock=_now)
            return
        path = cfg.path

        def open_file() -> SqliteBackend:
            return SqliteBackend(
                path,
                cfg.eviction,
                clock=_now,
                synchronous=cfg.synchronous,
                busy_timeout=cfg.busy_timeout,
                check_integrity=cfg.check_integrity,
            )

        self._store = await self._call(open_file, self._writer)

    async def close(self) -> None:
        store, self._store = self._store, None
        with self._pool_lock:
            self._closed = True
            readers, self._free = self._free, []
        if store is not None:

            def close_all() -> None:
                for reader in readers:
                    reader.close()
                store.close()

            await self._call(close_all, self._writer)

    async def write(self, fn: Callable[[MemoryBackend], T]) -> T:
        """Run ``fn`` on the backend as a write (see the module doc)."""
        store = self.store
        try:
            if not self._threaded:
                result = await self._call(lambda: fn(store), self._writer)
            else:
                async with self._lane:
                    result = await self._call(lambda: fn(store), self._writer)
        except StorageUnavailable as exc:
            self._degrade(exc)
            raise
        if self._degraded is not None:
            self._degraded = None
            self.report(None)
        self._refused = 0
        return result

    async def read(self, fn: Callable[[MemoryBackend], T]) -> T:
        """Run ``fn`` on a read connection (see the module doc)."""
        store = self.store
        try:
            if not isinstance(store, SqliteBackend):
                return await self._call(lambda: fn(store), self._writer)
            result = await self._read_thread(store, fn)
        except StorageUnavailable as exc:
            self._degrade(exc)
            raise
        if store.statistics_pending() > PENDING_LIMIT and not self._flushing:
            # In the background: a read never waits for the write lane.
            assert self._nursery is not None, "open() gave the nursery"
            self._flushing = True
            self._nursery.start_soon(self._flush)
        return result

    async def _flush(self) -> None:
        try:
            # Skipped when the file cannot take it now: the next write carries
            # the statistics, and the status reports the store degraded.
            with contextlib.suppress(StorageBusy, StorageUnavailable):
                await self.write(lambda s: s.flush() if isinstance(s, SqliteBackend) else None)
        finally:
            self._flushing = False

    async def _read_thread(self, store: SqliteBackend, fn: Callable[[MemoryBackend], T]) -> T:
        def work() -> T:
            with self._pool_lock:
                reader = self._free.pop() if self._free else None
            if reader is None:
                reader = store.reader()
            try:
                return fn(reader)
            finally:
                with self._pool_lock:
                    closed = self._closed
                    if not closed:
                        self._free.append(reader)
                if closed:
                    reader.close()  # the runner closed while this read ran

        _NOW.set(self._clock())
        return await trio.to_thread.run_sync(work, abandon_on_cancel=True, limiter=self._reader)

    def _degrade(self, exc: StorageUnavailable) -> None:
        reason = str(exc)
        if reason != self._degraded:
            self.report(f"storage unavailable: {reason}")
        self._degraded = reason
        self._refused += 1

    def status(self) -> MemoryStatus:
        cfg = self.config
        return MemoryStatus(
            backend="postgres" if cfg.url else "sqlite" if cfg.path else "memory",
            path=cfg.path,
            url=None if cfg.url is None else redact(cfg.url),
            degraded=self._degraded is not None,
            last_error=self._degraded,
            refused=self._refused,
        )
