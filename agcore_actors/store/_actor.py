"""The SessionStore actor: sessions, messages and facts behind one protocol, group commit.

::

    spec = session_store_spec("sessions", backend=SqliteSessions("bot.db"))
    store = await system.root.start_child(spec)    # or a child of your supervisor
    record = await store.ask(sm.BeginTurn(session="chat-1", turn="t1",
                                          expected_version=0, messages=[user("hi")]))

The protocol is :mod:`agcore_actors.store.messages`.

Semantics
    Requests are taken concurrently (the actor is concurrent, up to
    :attr:`SessionStore.max_concurrency` in flight) and applied one at a time, in the
    order they are taken, by a single writer task. When the writer takes a request it
    also takes every request already queued (at most ``config.max_batch``) and applies
    them all in **one transaction with one fsync** (group commit); each gets its reply
    only once that transaction is durable. A request that fails (a conflict in one
    session) is rolled back alone; the others in its batch still commit. While one
    batch is being written the next one gathers, so 1,000 sessions committing at once
    cost a handful of fsyncs, not 1,000.

Cancellation
    An asker cancelled before the writer took its request withdraws it: it is never
    applied. Once taken, the request is applied and made durable, and the asker's
    cancellation completes right after (never half-applied). The SQLite backend runs in
    a worker thread that is never interrupted mid-transaction.

Errors
    :class:`Conflict`, :class:`SessionNotFound`, :class:`InvalidTranscript` and
    :class:`InvalidRequest` are the asker's: nothing was written, the actor carries
    on. :class:`StoreStorageError` fails every request of its batch and crashes the
    actor; its supervisor restarts it, which reopens the database.

Time
    Every timestamp (``created_at``, ``updated_at``) comes from ``clock``, read on the
    event loop when a request arrives, never in the worker thread: pass
    ``trio.current_time`` to run on virtual time. The default is ``time.time`` (Unix
    seconds, so stored times mean the same after a restart).
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, assert_never

import attrs
import outcome
import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from ..actor import Actor, ChildSpec
from . import _ops
from ._backend import Backend
from ._config import InMemorySessions, SessionBackendConfig, SessionStoreConfig, SqliteSessions
from ._errors import (
    Conflict,
    InvalidRequest,
    InvalidTranscript,
    SessionNotFound,
    StoreStorageError,
)
from ._memory import InMemorySessionBackend
from ._migrate import migrate_memory_transcripts
from ._sqlite import SqliteSessionBackend
from .messages import (
    AppendTurn,
    BeginTurn,
    CommitTurn,
    DeleteSessions,
    ExpireSessions,
    ExportSession,
    ListSessions,
    LoadSession,
    RepairInterrupted,
    RestoreSession,
    StoreMsg,
    StoreReply,
    UpdateSession,
)

__all__ = ["SessionStore", "session_store_spec"]

M = TypeVar("M")
R = TypeVar("R")
Clock = Callable[[], float]


@attrs.define(eq=False, slots=True)
class _Request:
    """One queued request: the work, its asker, and whether the writer took it."""

    work: Callable[[], Any]
    write: bool
    asker: Task
    taken: bool = False
    withdrawn: bool = False


class SessionStore(Actor[StoreMsg]):
    """The session store (see the module doc: semantics, cancellation, errors, time)."""

    #: Requests in flight at once (each waits for its batch); more wait in the mailbox.
    max_concurrency: ClassVar[int] = 4096
    expected_errors = (Conflict, SessionNotFound, InvalidTranscript, InvalidRequest)

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        *,
        threaded: bool,
        config: SessionStoreConfig | None = None,
        clock: Clock = time.time,
    ) -> None:
        """``open_backend`` runs at each start (in a worker thread if ``threaded``,
        which every call to the backend then is); the backend is closed at each stop."""
        self.config = config or SessionStoreConfig()
        self._open_backend = open_backend
        self._threaded = threaded
        self._clock = clock
        self._backend: Backend | None = None
        self._queue: collections.deque[_Request] = collections.deque()
        self._wakeup: trio.Event | None = None
        self._limiter = trio.CapacityLimiter(1)
        #: Transactions written and requests applied (for metrics and tests).
        self.batches = 0
        self.applied = 0

    async def _call(self, fn: Callable[[], R]) -> R:
        if self._threaded:
            return await trio.to_thread.run_sync(fn, limiter=self._limiter)
        return fn()

    async def on_start(self) -> None:
        self._backend = await self._call(self._open_backend)
        self.ctx.nursery.start_soon(self._writer)

    async def on_stop(self, reason: BaseException | None) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            await self._call(backend.close)

    async def handle(self, msg: StoreMsg) -> StoreReply:
        match msg:
            case BeginTurn():
                return await self._submit(_ops.begin, msg, write=True)
            case AppendTurn():
                return await self._submit(_ops.append_turn, msg, write=True)
            case CommitTurn():
                return await self._submit(_ops.commit, msg, write=True)
            case RepairInterrupted():
                return await self._submit(_ops.repair, msg, write=True)
            case UpdateSession():
                return await self._submit(_ops.update, msg, write=True)
            case LoadSession():
                return await self._submit(_ops.load, msg, write=False)
            case ListSessions():
                return await self._submit(_ops.list_sessions, msg, write=False)
            case ExportSession():
                return await self._submit(_ops.export, msg, write=False)
            case DeleteSessions():
                return await self._submit(_ops.delete, msg, write=True)
            case ExpireSessions():
                return await self._submit(_ops.expire, msg, write=True)
            case RestoreSession():
                return await self._submit(_ops.restore, msg, write=True)
            case _:
                assert_never(msg)

    async def _submit(self, op: Callable[[Backend, M, float], R], msg: M, *, write: bool) -> R:
        """Queue ``op`` for the writer and wait for its outcome (see Cancellation)."""
        backend = self._backend
        assert backend is not None, "the backend is open between on_start and on_stop"
        request = _Request(
            functools.partial(op, backend, msg, self._clock()), write, current_task()
        )
        self._queue.append(request)
        if self._wakeup is not None:
            self._wakeup.set()

        def abort(_: Any) -> Abort:
            if request.taken:
                return Abort.FAILED  # it is being written: wait for the outcome
            request.withdrawn = True
            return Abort.SUCCEEDED

        reply: R = await wait_task_rescheduled(abort)
        return reply

    def _take(self) -> list[_Request]:
        batch: list[_Request] = []
        queue = self._queue
        while queue and len(batch) < self.config.max_batch:
            request = queue.popleft()
            if not request.withdrawn:
                request.taken = True
                batch.append(request)
        return batch

    async def _writer(self) -> None:
        """The single writer: take what is queued, write it in one transaction, reply."""
        while True:
            batch = self._take()
            if not batch:
                self._wakeup = trio.Event()
                await self._wakeup.wait()
                self._wakeup = None
                continue
            backend = self._backend
            assert backend is not None
            write = any(r.write for r in batch)
            work = [r.work for r in batch]
            try:
                # Shielded: the thread cannot be interrupted anyway, and every taken
                # request must get its outcome or its asker would wait for ever.
                with trio.CancelScope(shield=True):
                    results = await self._call(functools.partial(backend.run_batch, work, write))
            except BaseException as exc:
                # The whole transaction failed: every request of it gets an error, then
                # the writer's failure crashes the actor.
                for request in batch:
                    failed = StoreStorageError(f"the transaction of this request failed: {exc}")
                    reschedule(request.asker, outcome.Error(failed))
                raise
            for request, result in zip(batch, results, strict=True):
                reschedule(request.asker, result)
            self.batches += 1
            self.applied += len(batch)
            if not self._threaded:
                await trio.lowlevel.cancel_shielded_checkpoint()  # let the askers queue more


def _opener(backend: SessionBackendConfig) -> tuple[Callable[[], Backend], bool]:
    """A function opening the backend, and whether it must run in a worker thread."""
    match backend:
        case InMemorySessions():
            # One store per spec: a restarted actor finds the sessions it had.
            shared = InMemorySessionBackend()
            return (lambda: shared), False
        case SqliteSessions():
            return functools.partial(_open_sqlite, backend), True
        case _:
            assert_never(backend)


def _open_sqlite(config: SqliteSessions) -> Backend:
    opened = SqliteSessionBackend(
        config.path, synchronous=config.synchronous, busy_timeout=config.busy_timeout
    )
    if config.migrate_from is not None:
        try:
            migrate_memory_transcripts(opened, config.migrate_from)
        except BaseException:
            opened.close()
            raise
    return opened


def session_store_spec(
    name: str,
    *,
    backend: SessionBackendConfig,
    config: SessionStoreConfig | None = None,
    clock: Clock = time.time,
) -> ChildSpec[StoreMsg]:
    """A child spec for a :class:`SessionStore` on ``backend``; a fresh actor per start.

    ``InMemorySessions``: the sessions live in the spec, so they survive restarts of the
    actor (not of the process). ``SqliteSessions``: each start opens the file (and runs
    the schema migrations and, once, the transcript migration).
    """
    cfg = config or SessionStoreConfig()
    open_backend, threaded = _opener(backend)
    factory = functools.partial(
        SessionStore, open_backend, threaded=threaded, config=cfg, clock=clock
    )
    return ChildSpec(name, factory, mailbox_size=cfg.mailbox_size)
