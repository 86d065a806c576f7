"""The PostgreSQL store under stalls, on the real server: a host's lease renewals never
wait behind its own write batches (they have a connection and a lane of their own), and
a transaction whose process stalled mid-batch is ended by the server after
``stall_timeout``, so its row locks no longer hold up the hosts taking over."""

from __future__ import annotations

import time
from typing import Any

import attrs
import psycopg
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.store import (
    LeaseHeld,
    PostgresSessions,
    StoreBusy,
    StoreUnavailable,
    session_store_spec,
)
from agcore_actors.store import _leases as leases
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store._actor import _open_postgres
from agcore_actors.store._postgres import PostgresSessionBackend
from tests.store.helpers import user
from tests.store.test_postgres import begin, run


async def test_a_renewal_is_answered_while_the_hosts_write_batch_waits_for_a_lock(
    postgres_url: str,
) -> None:
    """Another connection locks a session's row; the store's write batch for that
    session waits for the lock in the server. A renewal sent meanwhile is answered
    (its heartbeat stored) before that write, which completes once the lock goes."""
    async with ActorSystem(strict=True, seed=0) as system:
        spec = session_store_spec("store", backend=PostgresSessions(postgres_url))
        store = await system.root.start_child(attrs.evolve(spec, start_timeout=60))
        lease = await store.ask(sm.AcquireLease(session="s", host="h", ttl=60.0))
        await store.ask(sm.RegisterHost(host="h", address="http://h.test", ttl=60.0))
        await store.ask(begin("s", 0, lease.token))
        locker = await trio.to_thread.run_sync(_connect, postgres_url)
        order: list[str] = []
        try:
            await trio.to_thread.run_sync(
                locker.execute, "SELECT id FROM sessions WHERE id = 's' FOR UPDATE"
            )

            async def write() -> None:
                await store.ask(
                    sm.CommitTurn(
                        session="s",
                        turn="t0",
                        expected_version=1,
                        messages=[user("a")],
                        fence=lease.token,
                    )
                )
                order.append("write")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                await _until_waiting_for_a_lock(postgres_url)
                with trio.fail_after(60):  # a hang guard: it used to wait for the lock
                    renewed = await store.ask(
                        sm.RenewLeases(host="h", ttl=60.0, leases=[("s", lease.token)])
                    )
                order.append("renewal")
                assert renewed.renewed == ["s"] and renewed.heartbeat
                await trio.to_thread.run_sync(locker.rollback)
        finally:
            await trio.to_thread.run_sync(locker.close)
        assert order == ["renewal", "write"]


async def test_a_grant_and_a_lease_look_up_are_answered_while_a_write_batch_waits_for_a_lock(
    postgres_url: str,
) -> None:
    """As above, for a takeover: the store's write batch waits for a row lock in the
    server; a grant of another session and the look-up of a lease, sent meanwhile, are
    answered before that write (they used to wait behind it in the write lane)."""
    async with ActorSystem(strict=True, seed=0) as system:
        spec = session_store_spec("store", backend=PostgresSessions(postgres_url))
        store = await system.root.start_child(attrs.evolve(spec, start_timeout=60))
        lease = await store.ask(sm.AcquireLease(session="s", host="h", ttl=60.0))
        await store.ask(begin("s", 0, lease.token))
        locker = await trio.to_thread.run_sync(_connect, postgres_url)
        order: list[str] = []
        try:
            await trio.to_thread.run_sync(
                locker.execute, "SELECT id FROM sessions WHERE id = 's' FOR UPDATE"
            )

            async def write() -> None:
                commit = sm.CommitTurn(
                    session="s", turn="t0", expected_version=1, messages=[user("a")],
                    fence=lease.token,
                )  # fmt: skip
                await store.ask(commit)
                order.append("write")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                await _until_waiting_for_a_lock(postgres_url)
                try:
                    with trio.fail_after(20):  # they used to wait for the lock
                        granted = await store.ask(sm.AcquireLease(session="o", host="h2", ttl=60.0))
                        found = await store.ask(sm.FindLease("s"))
                    order.append("grant")
                finally:
                    await trio.to_thread.run_sync(locker.rollback)
        finally:
            await trio.to_thread.run_sync(locker.close)
        assert order == ["grant", "write"]
        assert (granted.host, granted.token, granted.previous_host) == ("h2", 1, None)
        assert found is not None and (found.host, found.token) == ("h", lease.token)


async def test_a_refused_grant_takes_no_lock_so_the_owners_renewal_never_queues_behind_it(
    postgres_url: str,
) -> None:
    """Host h holds a live lease; another connection holds it ``FOR KEY SHARE`` (h's own
    write batch, its host starved mid-transaction). Host h2's grant is refused at once
    (``LeaseHeld``), and h's renewal sent after it is answered. A grant used to take
    ``FOR UPDATE`` before deciding: it queued behind the write, and the renewal (an
    ``UPDATE`` of the row) queued behind the grant."""
    async with ActorSystem(strict=True, seed=0) as system:
        stores = []
        for name in ("h", "h2"):
            spec = session_store_spec(name, backend=PostgresSessions(postgres_url))
            stores.append(await system.root.start_child(attrs.evolve(spec, start_timeout=60)))
        h, h2 = stores
        lease = await h.ask(sm.AcquireLease(session="s", host="h", ttl=60.0))
        locker = await trio.to_thread.run_sync(_connect, postgres_url)
        order: list[str] = []
        done = trio.Event()

        async def grant_then_renew() -> None:
            with pytest.raises(LeaseHeld) as held:
                await h2.ask(sm.AcquireLease(session="s", host="h2", ttl=60.0))
            assert (held.value.host, held.value.token) == ("h", lease.token)
            order.append("refused")
            renewed = await h.ask(sm.RenewLeases(host="h", ttl=60.0, leases=[("s", lease.token)]))
            assert renewed.renewed == ["s"]
            order.append("renewed")
            done.set()

        try:
            await trio.to_thread.run_sync(
                locker.execute, "SELECT token FROM leases WHERE session = 's' FOR KEY SHARE"
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(grant_then_renew)
                with trio.move_on_after(20):  # both used to wait for the lock
                    await done.wait()
                order.append("write ends")
                await trio.to_thread.run_sync(locker.rollback)
        finally:
            await trio.to_thread.run_sync(locker.close)
        assert order == ["refused", "renewed", "write ends"]


async def test_a_grant_of_a_lapsed_lease_still_waits_for_the_old_owners_write(
    postgres_url: str,
) -> None:
    """The lock-free first read must not let a grant past a fenced write in progress:
    h's lease has lapsed and a connection holds it ``FOR KEY SHARE`` (h's write batch);
    h2's grant waits for that transaction and is then granted with the next token."""
    async with ActorSystem(strict=True, seed=0) as system:
        spec = session_store_spec("store", backend=PostgresSessions(postgres_url))
        store = await system.root.start_child(attrs.evolve(spec, start_timeout=60))
        old = await store.ask(sm.AcquireLease(session="s", host="h", ttl=0.01))
        await trio.sleep(0.05)
        locker = await trio.to_thread.run_sync(_connect, postgres_url)
        order: list[str] = []
        try:
            await trio.to_thread.run_sync(
                locker.execute, "SELECT token FROM leases WHERE session = 's' FOR KEY SHARE"
            )

            async def grant() -> None:
                new = await store.ask(sm.AcquireLease(session="s", host="h2", ttl=60.0))
                assert (new.host, new.token) == ("h2", old.token + 1)
                order.append("grant")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(grant)
                with trio.fail_after(20):
                    await _until_waiting_for_a_lock(postgres_url)
                order.append("write ends")
                await trio.to_thread.run_sync(locker.rollback)
        finally:
            await trio.to_thread.run_sync(locker.close)
        assert order == ["write ends", "grant"]


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url)


async def _until_waiting_for_a_lock(url: str) -> None:
    """Until some backend of the server waits for a row lock (the store's write)."""
    query = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE wait_event_type = 'Lock' AND datname = current_database()"
    )
    with psycopg.connect(url, autocommit=True) as watcher:
        while True:
            if watcher.execute(query).fetchone() != (0,):
                return
            await trio.sleep(0.01)


def test_a_transaction_left_idle_by_a_stalled_host_is_ended_and_its_locks_released(
    postgres_url: str,
) -> None:
    """Host a's connection locks a session's lease in a transaction and then does
    nothing (its process stopped mid-batch). After ``stall_timeout`` the server ends
    it: host b's takeover gets the lock (b waits no longer than its own lock_timeout,
    far above a's stall_timeout), and a's next batch reconnects."""
    a = PostgresSessionBackend(postgres_url, stall_timeout=0.2)
    b = PostgresSessionBackend(postgres_url)
    try:
        old = run(a, leases.acquire, sm.AcquireLease(session="s", host="a", ttl=0.05))
        run(a, ops.begin, begin("s", 0, old.token))
        pid = a.connection.info.backend_pid
        a.connection.execute("SELECT token FROM leases WHERE session = 's' FOR UPDATE")
        time.sleep(0.1)  # a's lease lapses (a grant of a live one is refused unlocked)
        b.connection.execute("SET lock_timeout = '30s'")
        b.connection.commit()
        # b's grant waits for a's lock until the server ends a's idle transaction.
        new = run(b, leases.acquire, sm.AcquireLease(session="s", host="b", ttl=60.0))
        assert new.token == old.token + 1 and new.host == "b"
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            gone = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,))
            assert gone.fetchone() == (0,)
        with pytest.raises((StoreUnavailable, StoreBusy)):
            run(a, ops.repair, sm.RepairInterrupted("s", "t0", fence=old.token))
        with pytest.raises(Exception, match="stale"):  # reconnected, and fenced
            run(a, ops.repair, sm.RepairInterrupted("s", "t0", fence=old.token))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(("reader", "migrate"), [(False, True), (True, False), (False, False)])
def test_every_connection_a_postgres_store_opens_ends_a_stalled_transaction(
    postgres_url: str, reader: bool, migrate: bool
) -> None:
    """The writer, the reader and the lease connection all carry ``stall_timeout``
    (also after reconnecting)."""
    config = PostgresSessions(postgres_url, stall_timeout=1.5)
    b = _open_postgres(config, reader=reader, migrate=migrate)
    assert isinstance(b, PostgresSessionBackend)
    try:
        for _ in range(2):
            shown = b.connection.execute("SHOW idle_in_transaction_session_timeout")
            assert shown.fetchone() == ("1500ms",)
            b.connection.rollback()
            b.connection.close()
            b.run_batch([], write=not reader)  # reconnects
    finally:
        b.close()
