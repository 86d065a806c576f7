"""``[store] url`` (and ``serve --store postgresql://…``) selects the PostgreSQL backend,
wins over ``path``, and turns ``[cluster]`` on unless the file turns it off."""

from __future__ import annotations

import attrs

from agcore_actors.config import Settings
from agcore_actors.config._runtime import cluster_config, store_backend
from agcore_actors.config._schema import ClusterSettings, StoreSettings
from agcore_actors.store import PostgresSessions, SqliteSessions

URL = "postgresql://agcore@db.internal:5432/agcore"


def test_a_url_selects_postgres_over_a_path_and_enables_the_cluster() -> None:
    settings = Settings(store=StoreSettings(path="bot.db", url=URL))
    backend = store_backend(settings)
    assert isinstance(backend, PostgresSessions) and backend.url == URL
    assert cluster_config(settings) is not None
    off = attrs.evolve(settings, cluster=ClusterSettings(enabled=False))
    assert cluster_config(off) is None


def test_without_a_url_the_path_is_sqlite_and_no_cluster() -> None:
    settings = Settings(store=StoreSettings(path="bot.db"))
    assert isinstance(store_backend(settings), SqliteSessions)
    assert cluster_config(settings) is None


def test_a_clustered_store_ends_a_stalled_transaction_after_one_lease_ttl() -> None:
    settings = Settings(store=StoreSettings(url=URL), cluster=ClusterSettings(lease_ttl=7.5))
    backend = store_backend(settings)
    assert isinstance(backend, PostgresSessions) and backend.stall_timeout == 7.5
    off = attrs.evolve(settings, cluster=ClusterSettings(enabled=False))
    alone = store_backend(off)
    assert isinstance(alone, PostgresSessions)
    assert alone.stall_timeout == PostgresSessions(URL).stall_timeout
