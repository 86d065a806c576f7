"""Fixtures of the agent tests."""

from __future__ import annotations

import pytest
import trio
import trio.testing


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """The store the test runs on: in memory (on virtual time) or a SQLite file."""
    name: str = request.param
    return name


@pytest.fixture
def clock(backend: str) -> trio.testing.MockClock | None:
    """Virtual time over the in-memory store; the SQLite lane's threads need real time."""
    return trio.testing.MockClock(autojump_threshold=0) if backend == "memory" else None
