"""The memory store on PostgreSQL: hosts sharing one database, connection and schema
errors, the missing-extra message. (The protocol itself is held to the model by the
stateful, search and seed-parity tests, which run on every backend.)"""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorRef
from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    KnowledgePage,
    MemoryStoreConfig,
    RetrievalMode,
    StorageError,
    StorageUnavailable,
    memory_store_spec,
)
from agcore_actors.memory.lowlevel import PostgresBackend
from agcore_actors.memory.messages import (
    Count,
    GetMemoryStatus,
    MemoryMsg,
    PutPage,
    Recall,
    Remember,
    Retrieve,
)


async def _host(url: str, system: ActorSystem) -> ActorRef[MemoryMsg]:
    """A MemoryStore on ``url`` in ``system`` (one host)."""
    spec = memory_store_spec("memory", config=MemoryStoreConfig(url=url), start_timeout=60)
    return await system.root.start_child(spec)


async def test_a_page_put_through_one_host_is_retrieved_through_the_other(
    postgres_url: str,
) -> None:
    """Two actor systems (two hosts), each with its own MemoryStore on the one database."""
    async with ActorSystem(strict=True, seed=0) as a, ActorSystem(strict=True, seed=1) as b:
        one = await _host(postgres_url, a)
        two = await _host(postgres_url, b)
        page = KnowledgePage(
            id="tokio", title="Tokio runtime", content="The tokio runtime schedules tasks."
        )
        await one.ask(PutPage(page))
        found = await two.ask(
            Retrieve(query="how does the tokio runtime schedule", mode=RetrievalMode.BM25)
        )
        assert [s.page.id for s in found.items] == ["tokio"]
        await two.ask(Remember(scope="user:ann", text="Ann prefers tea"))
        recalled = await one.ask(Recall(scope="user:ann", query="what does Ann prefer"))
        assert [m.text for m in recalled.memories] == ["Ann prefers tea"]
        status = await one.ask(GetMemoryStatus())
        assert status.backend == "postgres" and not status.degraded


async def test_hosts_writing_at_once_never_exceed_the_capacity(postgres_url: str) -> None:
    """Two backends (two hosts) writing concurrently from threads under Capacity(5):
    writes from both are serialised by the database, so the bound holds exactly."""
    eviction = EvictionConfig(policy=Capacity(max_items=5), check_interval=64)
    hosts = [PostgresBackend(postgres_url, eviction) for _ in range(2)]
    try:

        def writer(h: int) -> None:
            for i in range(40):
                hosts[h].put(f"h{h}:{i:02d}", "x", index_text="alpha beta")

        async with trio.open_nursery() as nursery:
            for h in range(2):
                nursery.start_soon(trio.to_thread.run_sync, writer, h)
        assert hosts[0].count() == 5 == hosts[1].count()
        # The full-text totals stayed exact: 5 indexed items, 2 tokens each.
        (docs,) = hosts[0]._execute("SELECT value FROM memory_meta WHERE name = 'docs'").fetchone()
        (df,) = hosts[0]._execute("SELECT df FROM memory_terms WHERE term = 'alpha'").fetchone()
        assert (docs, df) == (5, 5)
    finally:
        for host in hosts:
            host.close()


def test_an_unreachable_server_is_storage_unavailable() -> None:
    with pytest.raises(StorageUnavailable) as info:
        PostgresBackend("postgresql://bot:s3cret@127.0.0.1:1/none", connect_timeout=1)
    assert "s3cret" not in str(info.value)


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    PostgresBackend(postgres_url).close()
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE memory_meta SET value = 99 WHERE name = 'schema_version'")
    with pytest.raises(StorageError, match="newer"):
        PostgresBackend(postgres_url)


def test_the_config_refuses_a_path_and_a_url_and_hides_the_password() -> None:
    with pytest.raises(ValueError):
        MemoryStoreConfig(path="m.db", url="postgresql://db/x")
    with pytest.raises(ValueError):
        MemoryStoreConfig(url="sqlite:///m.db")
    assert "s3cret" not in repr(MemoryStoreConfig(url="postgresql://bot:s3cret@db/x"))


def test_without_psycopg_opening_says_which_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from agcore_actors.memory.lowlevel import PostgresBackend\n"
        "PostgresBackend('postgresql://db/x')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ModuleNotFoundError: a memory store on PostgreSQL needs psycopg: "
        "pip install 'agcore-actors[postgres]'"
    )


async def test_a_count_through_each_host_sees_the_others_writes(postgres_url: str) -> None:
    async with ActorSystem(strict=True, seed=0) as a, ActorSystem(strict=True, seed=1) as b:
        one = await _host(postgres_url, a)
        two = await _host(postgres_url, b)
        for i in range(3):
            await (one if i % 2 else two).ask(PutPage(KnowledgePage(id=f"p{i}", title=f"page {i}")))
        assert await one.ask(Count()) == 3 == await two.ask(Count())


def test_a_lost_connection_is_unavailable_and_the_next_call_connects_again(
    postgres_url: str,
) -> None:
    import psycopg

    store = PostgresBackend(postgres_url)
    try:
        store.put("a", "x")
        pid = store._conn.info.backend_pid
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StorageUnavailable):
            store.get("a")
        got = store.get("a")
        assert got is not None and got.content == "x"
    finally:
        store.close()


def test_a_write_waiting_past_the_busy_timeout_is_storage_busy_and_writes_nothing(
    postgres_url: str,
) -> None:
    """Another host holds the store's write lock (in a transaction of its own)."""
    import psycopg

    from agcore_actors.memory import StorageBusy
    from agcore_actors.memory._postgres import WRITE_LOCK

    store = PostgresBackend(postgres_url, busy_timeout=0.2)
    try:
        with psycopg.connect(postgres_url) as other:
            other.execute(
                "SELECT pg_advisory_xact_lock(hashtext(current_schema() || %s))", (WRITE_LOCK,)
            )
            with pytest.raises(StorageBusy):
                store.put("a", "x")
            other.rollback()
        assert store.peek("a") is None
        store.put("a", "x")  # the lock is free again
        assert store.count() == 1
    finally:
        store.close()
