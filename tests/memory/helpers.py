"""Shared helpers of the memory tests: a fake wall clock and store builders."""

from __future__ import annotations

from pathlib import Path

from agcore_actors.memory import EvictionConfig
from agcore_actors.memory.lowlevel import (
    InMemoryBackend,
    MemoryBackend,
    PostgresBackend,
    SqliteBackend,
)
from tests.postgres_fixture import fresh_url

#: Every backend the shared tests run on.
KINDS = ("memory", "sqlite", "postgres")


class FakeClock:
    """A wall clock that moves only when told to (Unix seconds)."""

    def __init__(self, start: float = 1_717_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_store(
    kind: str, tmp_path: Path, clock: FakeClock, eviction: EvictionConfig | None = None
) -> MemoryBackend:
    """A fresh, empty store of ``kind`` (PostgreSQL: a schema of its own in the run's
    database, see ``tests.postgres_fixture``)."""
    if kind == "memory":
        return InMemoryBackend(eviction, clock=clock)
    if kind == "postgres":
        return PostgresBackend(fresh_url(), eviction, clock=clock)
    return SqliteBackend(tmp_path / "memory.db", eviction, clock=clock)
