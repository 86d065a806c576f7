"""Shared fixtures. Every system in the suite runs in strict message mode."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType

import pytest

from agcore_actors import ActorSystem

pytest_plugins = ("tests.peers.fixtures", "tests.postgres_fixture")


@pytest.fixture
async def system() -> AsyncIterator[ActorSystem]:
    async with ActorSystem(strict=True, seed=0) as system:
        yield system


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def load_benchmark(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """Import ``benchmarks/<name>.py`` by path (the benchmarks are scripts, not modules).

    For smoke tests that run a benchmark with ``--quick``: they assert that it runs and
    prints its tables, never a speed (the figures belong in docs/performance.md).
    """

    def load(name: str) -> ModuleType:
        path = BENCHMARKS / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # msgspec and dataclasses resolve annotations through sys.modules.
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        return module

    return load
