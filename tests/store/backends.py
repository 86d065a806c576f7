"""The three session backends under one fixture's parameters, for tests that drive a
backend request by request (no actor): ``@pytest.fixture(params=BACKENDS)``, then
:func:`open_backend`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_actors.store._postgres import PostgresSessionBackend
from agcore_actors.store.lowlevel import Backend, InMemorySessionBackend, SqliteSessionBackend

BACKENDS = ["memory", "sqlite", "postgres"]


def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A new backend of the kind ``request.param`` names (close it after the test)."""
    if request.param == "memory":
        return InMemorySessionBackend()
    if request.param == "sqlite":
        return SqliteSessionBackend(tmp_path / "s.db")
    # The store's clock is the caller's here, as the tests give it.
    return PostgresSessionBackend(request.getfixturevalue("postgres_url"), lease_clock="local")
