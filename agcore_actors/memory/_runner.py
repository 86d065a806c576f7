"""How the MemoryStore actor runs its backend's calls, and what it knows of its health.

- The SQLite backend's calls run in trio worker threads, so the event loop never
  blocks on disk; the in-memory backend's run inline.
- Writes go one at a time through one limiter (the backend has one connection)
  and are never abandoned: a cancelled asker waits for the transaction to end,
  so a write is committed or never started, never half-applied.
- The clock is read on the event loop, once per call, and the backend sees that
  value for the whole call (in its thread too): every timestamp of one message
  agrees. The default clock follows trio's (:class:`TrioWallClock`), so under a
  virtual clock timestamps are virtual too.
- Health: a :class:`StorageUnavailable` (disk full, read-only, I/O error) makes
  the store *degraded* until a write succeeds again; the actor reports it.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from typing import TypeVar

import trio

from ._config import MemoryStoreConfig
from ._errors import StorageUnavailable
from ._inmemory import InMemoryBackend
from ._sqlite import SqliteBackend
from ._store import Clock, MemoryBackend
from .messages import MemoryStatus

T = TypeVar("T")

_NOW: contextvars.ContextVar[float] = contextvars.ContextVar("memory_now")


def _now() -> float:
    return _NOW.get()


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
        self._threaded = config.path is not None
        self._writer = trio.CapacityLimiter(1)
        self._store: MemoryBackend | None = None
        self._degraded: str | None = None
        self._refused = 0

    @property
    def store(self) -> MemoryBackend:
        assert self._store is not None, "the store is open between open() and close()"
        return self._store

    async def _call(self, fn: Callable[[], T], limiter: trio.CapacityLimiter) -> T:
        _NOW.set(self._clock())  # copied into the worker thread with the context
        if not self._threaded:
            return fn()
        return await trio.to_thread.run_sync(fn, limiter=limiter)

    async def open(self) -> None:
        cfg = self.config
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
        if store is not None:
            await self._call(store.close, self._writer)

    async def write(self, fn: Callable[[MemoryBackend], T]) -> T:
        """Run ``fn`` on the backend as a write (see the module doc)."""
        store = self.store
        try:
            result = await self._call(lambda: fn(store), self._writer)
        except StorageUnavailable as exc:
            self._degrade(exc)
            raise
        self._degraded = None
        self._refused = 0
        return result

    async def read(self, fn: Callable[[MemoryBackend], T]) -> T:
        """Run ``fn`` on the backend as a read."""
        store = self.store
        try:
            return await self._call(lambda: fn(store), self._writer)
        except StorageUnavailable as exc:
            self._degrade(exc)
            raise

    def _degrade(self, exc: StorageUnavailable) -> None:
        self._degraded = str(exc)
        self._refused += 1

    def status(self) -> MemoryStatus:
        return MemoryStatus(
            backend="memory" if self.config.path is None else "sqlite",
            path=self.config.path,
            degraded=self._degraded is not None,
            last_error=self._degraded,
            refused=self._refused,
        )
