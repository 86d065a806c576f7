"""The PostgreSQL helpers the session store and the memory store share
(``agcore_actors._postgres_common``): each store's errors for psycopg's, and a schema
newer than the code refused on the real server with nothing changed."""

from __future__ import annotations

import psycopg
import pytest

from agcore_actors.memory import _errors as memory_errors
from agcore_actors.memory import _postgres_schema as memory_schema
from agcore_actors.store import StoreBusy, StoreStorageError, StoreUnavailable
from agcore_actors.store import _postgres_schema as store_schema

URL = "postgresql://bot:s3cret@db/x"


def _error(sqlstate: str) -> psycopg.Error:
    return psycopg.errors.lookup(sqlstate)("boom s3cret")


@pytest.mark.parametrize(
    ("sqlstate", "session_store", "memory_store"),
    [
        ("40001", StoreBusy, memory_errors.StorageBusy),  # serialization failure
        ("40P01", StoreBusy, memory_errors.StorageBusy),  # deadlock
        ("55P03", StoreBusy, memory_errors.StorageBusy),  # lock not available
        ("23505", StoreBusy, memory_errors.StorageError),  # unique violation: the store retries
        ("08006", StoreUnavailable, memory_errors.StorageUnavailable),
        ("53300", StoreUnavailable, memory_errors.StorageUnavailable),
        ("57P01", StoreUnavailable, memory_errors.StorageUnavailable),
        ("25006", StoreUnavailable, memory_errors.StorageUnavailable),  # read-only
        ("22001", StoreStorageError, memory_errors.InvalidInput),  # a value too long
        ("42P01", StoreStorageError, memory_errors.StorageError),
    ],
)
def test_each_store_maps_a_sqlstate_to_its_own_error_without_the_password(
    sqlstate: str, session_store: type[Exception], memory_store: type[Exception]
) -> None:
    for classify, expected in (
        (store_schema.classify, session_store),
        (memory_schema.classify, memory_store),
    ):
        error = classify(_error(sqlstate), URL)
        assert type(error) is expected
        assert "s3cret" not in str(error) and "boom" in str(error)


def test_a_lost_connection_without_a_sqlstate_is_unavailable() -> None:
    lost = psycopg.OperationalError("connection lost")
    assert type(store_schema.classify(lost, URL)) is StoreUnavailable
    assert type(memory_schema.classify(lost, URL)) is memory_errors.StorageUnavailable


def test_a_newer_session_schema_is_refused_and_left_as_it_is(postgres_url: str) -> None:
    store_schema.connect(postgres_url, connect_timeout=5, migrate_schema=True).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE store_meta SET value = '99' WHERE key = 'sessions_schema_version'")
    with pytest.raises(StoreStorageError, match="session tables have schema version 99, newer"):
        store_schema.connect(postgres_url, connect_timeout=5, migrate_schema=True)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        row = conn.execute("SELECT value FROM store_meta").fetchone()
    assert row == ("99",)
