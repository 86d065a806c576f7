"""Shared fixtures. Every system in the suite runs in strict message mode."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agcore_actors import ActorSystem


@pytest.fixture
async def system() -> AsyncIterator[ActorSystem]:
    async with ActorSystem(strict=True, seed=0) as system:
        yield system
