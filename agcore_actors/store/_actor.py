"""The SessionStore actor: sessions, messages and facts behind one protocol, group commit.

::

    spec = session_store_spec("sessions", backend=SqliteSessions("bot.db"))
    store = await system.root.start_child(spec)    # or a child of your supervisor
    record = await store.ask(sm.BeginTurn(session="chat-1", turn="t1",
                                          expected_version=0, messages=[user("hi")]))

The protocol is :mod:`agcore_actors.store.messages`; :class:`SessionStore` says how it
runs (semantics, cancellation, errors, time).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from typing import ClassVar, TypeVar, assert_never

import trio

from ..actor import DEFAULT_ISOLATION, Actor, ChildSpec, CircuitBreaker
from ..actor.lowlevel import defer_reply
from . import _leases, _ops
from . import messages as sm
from ._backend import Backend
from ._config import (
    InMemorySessions,
    PostgresSessions,
    SessionBackendConfig,
    SessionStoreConfig,
    SqliteSessions,
)
from ._errors import (
    Conflict,
    Fenced,
    HostNotFound,
    InvalidRequest,
    InvalidTranscript,
    LeaseHeld,
    SessionNotFound,
    StoreBusy,
    StoreUnavailable,
    TurnExists,
)
from ._lane import Lane
from ._memory import InMemorySessionBackend
from ._opening import open_postgres, open_sqlite

__all__ = ["SessionStore", "session_store_spec"]

#: The opener's name before it moved to ``_opening`` (tests import it from here).
_open_postgres = open_postgres

M = TypeVar("M")
R = TypeVar("R")
Clock = Callable[[], float]


class SessionStore(Actor[sm.StoreMsg]):
    """The session store: one protocol over a backend, written by a single writer.

    Semantics
        The actor reads its mailbox in order and hands each request to a lane without
        waiting for its outcome (the lane completes the request's deferred reply, see
        :func:`agcore_actors.actor.lowlevel.defer_reply`); at most
        :attr:`SessionStore.max_queued` wait in a lane, beyond which the actor stops
        reading its mailbox (back-pressure). (Spawned with ``max_concurrency`` > 1, each
        request waits in a worker instead: the same batches.) Requests are applied one at
        a time, in the order they are taken, by a single writer task. When the writer
        takes a request it also takes every request already queued (at most
        ``config.max_batch``) and applies them all in **one transaction with one fsync**
        (group commit); each gets its reply only once that transaction is durable. A
        request that fails (a conflict in one session) is rolled back alone; the others in
        its batch still commit. While one batch is being written the next one gathers, so
        1,000 sessions committing at once cost a handful of fsyncs, not 1,000.

        Reads (``LoadSession``, ``ListSessions``, ``ExportSession``, ``HasTurn``) on
        SQLite go to a second connection, in a lane of their own batched the same way
        (one read transaction per batch), so they never wait behind a write's fsync. A
        read sees every write answered before it was sent, and never part of a write.
        (In memory, each request runs at once, in the handler: there is no fsync to
        share.)

        On PostgreSQL, lease renewals and host heartbeats (``RenewLeases``,
        ``HostHeartbeat``, ``RegisterHost``) go to a third connection, in a lane of their
        own: a host's renewal never waits behind its sessions' write batches (only, in
        the server, for the row locks of a batch in flight). Lease grants, releases and
        look-ups (``AcquireLease``, ``ReleaseLeases``, ``FindLease``) likewise have a
        fourth connection and lane: a takeover's grant, and the look-up of a session's
        owner that routes each request, wait neither for the turn batches queued in the
        write lane, nor for the session reads in the read lane, nor behind a renewal.

        Requests in flight at the same moment have no order between them: wait for a
        reply before sending a request that depends on it.

    Cancellation
        An asker cancelled before the writer took its request withdraws it: it is never
        applied. Once taken, the request is applied and made durable, and the asker's
        cancellation completes right after (never half-applied). The SQLite backend runs in
        a worker thread that is never interrupted mid-transaction. A graceful stop applies
        what the lanes still hold before closing; any other end (a crash, a kill) leaves
        what was not taken unapplied, and its askers get :class:`ActorCrashed` or
        :class:`ActorStopped`.

    Errors
        :class:`Conflict`, :class:`TurnExists`, :class:`SessionNotFound`,
        :class:`InvalidTranscript`, :class:`InvalidRequest`, :class:`Fenced`,
        :class:`LeaseHeld` and :class:`HostNotFound` are the asker's: nothing was written,
        the actor carries on. :class:`StoreBusy` (retryable) and :class:`StoreUnavailable`
        (disk full, read-only, I/O error) fail every request of their batch, which was
        rolled back; the actor carries on, and after a :class:`StoreUnavailable` reports
        itself degraded (``ActorInfo.degraded`` in :meth:`ActorSystem.snapshot`) until a
        write succeeds again. Any other :class:`StoreStorageError` fails every request of
        its batch and crashes the actor; its supervisor restarts it, which reopens the
        database.

    Time
        Every timestamp (``created_at``, ``updated_at``) comes from ``clock``, read on the
        event loop when a request arrives, never in the worker thread: pass
        ``trio.current_time`` to run on virtual time. The default is ``time.time`` (Unix
        seconds, so stored times mean the same after a restart). Leases and host
        heartbeats are on the store's clock: ``clock`` too in memory and on SQLite,
        PostgreSQL's own on PostgreSQL (the one clock every host sharing it sees).
    """

    #: Requests waiting in one lane at once; more wait in the mailbox.
    max_queued: ClassVar[int] = 4096
    #: The lanes' tasks run in the incarnation's nursery; the actor itself is serial.
    background_tasks: ClassVar[bool] = True
    expected_errors = (
        Conflict,
        TurnExists,
        SessionNotFound,
        InvalidTranscript,
        InvalidRequest,
        Fenced,
        LeaseHeld,
        HostNotFound,
        StoreBusy,
        StoreUnavailable,
    )

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        *,
        open_reader: Callable[[], Backend] | None = None,
        open_leases: Callable[[], Backend] | None = None,
        open_grants: Callable[[], Backend] | None = None,
        threaded: bool,
        config: SessionStoreConfig | None = None,
        clock: Clock = time.time,
    ) -> None:
        """``open_backend`` runs at each start (in a worker thread if ``threaded``,
        which every call to the backend then is) and the backend is closed at each stop.
        ``open_reader``, if given, opens a second backend on the same data for the reads
        (``LoadSession``, ``ListSessions``, ``ExportSession``, ``HasTurn``), served in a
        lane of their own so that they never wait behind a write's fsync. ``open_leases`` likewise
        opens a backend for lease renewals and heartbeats, in a lane of their own, and
        ``open_grants`` one for lease grants, releases and look-ups."""
        self.config = config or SessionStoreConfig()
        self._open_backend = open_backend
        self._open_reader = open_reader
        self._open_leases = open_leases
        self._open_grants = open_grants
        self._threaded = threaded
        self._clock = clock
        self._writes: Lane | None = None
        self._reads: Lane | None = None
        self._renewals: Lane | None = None
        self._grants: Lane | None = None

    async def on_start(self) -> None:
        batch = self.config.max_batch
        report = self.ctx.set_degraded
        backend = await self._open(self._open_backend)
        self._writes = Lane(backend, threaded=self._threaded, max_batch=batch, report=report)
        self._reads = self._writes
        if self._open_reader is not None:
            reader = await self._open(self._open_reader)
            self._reads = Lane(reader, threaded=self._threaded, max_batch=batch, report=report)
            self.ctx.nursery.start_soon(self._reads.serve)
        self._renewals = self._writes
        if self._open_leases is not None:
            leases = await self._open(self._open_leases)
            self._renewals = Lane(leases, threaded=self._threaded, max_batch=batch, report=report)
            self.ctx.nursery.start_soon(self._renewals.serve)
        self._grants = self._writes
        if self._open_grants is not None:
            grants = await self._open(self._open_grants)
            self._grants = Lane(grants, threaded=self._threaded, max_batch=batch, report=report)
            self.ctx.nursery.start_soon(self._grants.serve)
        self.ctx.nursery.start_soon(self._writes.serve)

    async def _open(self, opener: Callable[[], Backend]) -> Backend:
        if self._threaded:
            return await trio.to_thread.run_sync(opener)
        return opener()

    async def on_stop(self, reason: BaseException | None) -> None:
        lanes = {
            id(lane): lane
            for lane in (self._reads, self._renewals, self._grants, self._writes)
            if lane is not None
        }
        self._reads = self._renewals = self._grants = self._writes = None
        for lane in lanes.values():
            if reason is None:
                # A graceful stop: what is queued is applied (a failure answers its
                # batch; what is then left gets the stop's error from the runtime).
                with contextlib.suppress(Exception):
                    await lane.drain()
            # Shielded: a cancelled stop still closes the connection (a PostgreSQL one
            # would otherwise stay open on the server until collected).
            with trio.CancelScope(shield=True):
                await lane.call(lane.backend.close)

    async def handle(self, msg: sm.StoreMsg) -> sm.StoreReply | None:
        """The reply when the request ran at once (in memory), else None: a lane
        completes the request's deferred reply once its batch is durable."""
        match msg:
            case sm.BeginTurn():
                return await self._write(_ops.begin, msg)
            case sm.BeginTurnAndLoad():
                return await self._write(_ops.begin_and_load, msg)
            case sm.AppendTurn():
                return await self._write(_ops.append_turn, msg)
            case sm.CommitTurn():
                return await self._write(_ops.commit, msg)
            case sm.RepairInterrupted():
                return await self._write(_ops.repair, msg)
            case sm.UpdateSession():
                return await self._write(_ops.update, msg)
            case sm.LoadSession():
                return await self._read(_ops.load, msg)
            case sm.ListSessions():
                return await self._read(_ops.list_sessions, msg)
            case sm.ExportSession():
                return await self._read(_ops.export, msg)
            case sm.HasTurn():
                return await self._read(_ops.has_turn, msg)
            case sm.DeleteSessions():
                return await self._write(_ops.delete, msg)
            case sm.ExpireSessions():
                return await self._write(_ops.expire, msg)
            case sm.RestoreSession():
                return await self._write(_ops.restore, msg)
            case sm.AcquireLease():
                return await self._grant(_leases.acquire, msg)
            case sm.RenewLeases():
                return await self._renew(_leases.renew, msg)
            case sm.ReleaseLeases():
                return await self._grant(_leases.release, msg)
            case sm.FindLease():
                if self._grants is self._writes:  # no lane of its own: with the reads
                    return await self._read(_leases.find, msg)
                return await self._grant(_leases.find, msg, write=False)
            case sm.RegisterHost():
                return await self._renew(_leases.register, msg)
            case sm.HostHeartbeat():
                return await self._renew(_leases.heartbeat, msg)
            case sm.ListHosts():
                return await self._read(_leases.list_hosts, msg)
            case sm.UnregisterHost():
                return await self._write(_leases.unregister, msg)
            case _:
                assert_never(msg)

    async def _write(self, op: Callable[[Backend, M, float], R], msg: M) -> R | None:
        assert self._writes is not None, "the lanes run between on_start and on_stop"
        return await self._submit(self._writes, op, msg, True)

    async def _renew(self, op: Callable[[Backend, M, float], R], msg: M) -> R | None:
        assert self._renewals is not None, "the lanes run between on_start and on_stop"
        return await self._submit(self._renewals, op, msg, True)

    async def _grant(
        self, op: Callable[[Backend, M, float], R], msg: M, *, write: bool = True
    ) -> R | None:
        assert self._grants is not None, "the lanes run between on_start and on_stop"
        return await self._submit(self._grants, op, msg, write)

    async def _read(self, op: Callable[[Backend, M, float], R], msg: M) -> R | None:
        assert self._reads is not None, "the lanes run between on_start and on_stop"
        return await self._submit(self._reads, op, msg, False)

    async def _submit(
        self, lane: Lane, op: Callable[[Backend, M, float], R], msg: M, write: bool
    ) -> R | None:
        if lane.threaded and len(lane) >= self.max_queued:
            await lane.room(self.max_queued)  # cancellable: nothing is queued yet
        work = functools.partial(op, lane.backend, msg, self._clock())
        if not lane.threaded:
            # In memory: run it here, now (the lane runs it inline: nothing is queued).
            return await lane.submit(work, write=write)
        try:
            reply = defer_reply(self.ctx)
        except RuntimeError:
            # Spawned concurrent (``max_concurrency`` > 1): this worker waits instead.
            return await lane.submit(work, write=write)
        lane.queue(work, write=write, reply=reply)
        return None

    @property
    def lanes(self) -> tuple[Lane, ...]:
        """The write lane, then the read lane if it is a separate one (for metrics)."""
        found = tuple(lane for lane in (self._writes, self._reads) if lane is not None)
        return found[:1] if len(found) == 2 and found[0] is found[1] else found


def _factory(
    backend: SessionBackendConfig, config: SessionStoreConfig, clock: Clock
) -> Callable[[], SessionStore]:
    match backend:
        case InMemorySessions():
            # One store per spec: a restarted actor finds the sessions it had.
            shared = InMemorySessionBackend()
            return functools.partial(
                SessionStore, lambda: shared, threaded=False, config=config, clock=clock
            )
        case SqliteSessions():
            return functools.partial(
                SessionStore,
                functools.partial(open_sqlite, backend, migrate=True),
                open_reader=functools.partial(open_sqlite, backend, migrate=False),
                threaded=True,
                config=config,
                clock=clock,
            )
        case PostgresSessions():
            return functools.partial(
                SessionStore,
                functools.partial(open_postgres, backend, reader=False, migrate=True),
                open_reader=functools.partial(open_postgres, backend, reader=True),
                open_leases=functools.partial(open_postgres, backend, reader=False),
                open_grants=functools.partial(open_postgres, backend, reader=False),
                threaded=True,
                config=config,
                clock=clock,
            )
        case _:
            assert_never(backend)


def session_store_spec(
    name: str,
    *,
    backend: SessionBackendConfig,
    config: SessionStoreConfig | None = None,
    clock: Clock = time.time,
    isolate: CircuitBreaker | None = DEFAULT_ISOLATION,
) -> ChildSpec[sm.StoreMsg]:
    """A child spec for a :class:`SessionStore` on ``backend``; a fresh actor per start.

    ``InMemorySessions``: the sessions live in the spec, so they survive restarts of the
    actor (not of the process). ``SqliteSessions``: each start opens the file (and runs
    the schema migrations and, once, the transcript migration). ``PostgresSessions``:
    each start connects (a writer, a reader, a renewal and a grant connection) and migrates the
    schema.
    ``isolate`` parks a store
    that keeps crashing (an error on every write that is no typed store error): its
    askers get ``ActorParked`` for a while, and its crashes never use up its
    supervisor's restart intensity (see :class:`~agcore_actors.actor.ChildSpec`; None:
    plain OTP restarts).
    """
    cfg = config or SessionStoreConfig()
    return ChildSpec(
        name, _factory(backend, cfg, clock), mailbox_size=cfg.mailbox_size, isolate=isolate
    )
