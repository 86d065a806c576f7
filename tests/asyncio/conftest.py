"""Fixtures of the asyncio tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.asyncio.rig import no_threads_left


@pytest.fixture
def threads_checked() -> Iterator[None]:
    """Every test ends with no thread it started still alive (``usefixtures`` it)."""
    with no_threads_left():
        yield
