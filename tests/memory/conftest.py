"""Fixtures of the seed-parity tests: every check runs on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agcore_actors.memory.embeddings import WordLlamaEmbedder
from agcore_actors.memory.lowlevel import MemoryBackend
from tests.memory.helpers import KINDS, FakeClock, make_store


@pytest.fixture
def clock() -> FakeClock:
    """A clock the test moves by hand."""
    return FakeClock()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    """The backend under test."""
    return str(request.param)


@pytest.fixture
def store(kind: str, tmp_path: Path, clock: FakeClock) -> Iterator[MemoryBackend]:
    """A fresh store of ``kind`` on ``clock`` (modules may define their own ``store``)."""
    s = make_store(kind, tmp_path, clock)
    yield s
    s.close()


@pytest.fixture(scope="session")
def embedder() -> WordLlamaEmbedder:
    """The ``embeddings`` extra's model, loaded once per test process (a second)."""
    return WordLlamaEmbedder()
