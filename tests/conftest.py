"""Shared fixtures. Every system in the suite runs in strict message mode."""

from __future__ import annotations

import fcntl
import importlib.util
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from agcore_actors import ActorSystem

pytest_plugins = ("tests.peers.fixtures", "tests.postgres_fixture")

#: Session fixtures that start a costly peer: under pytest-xdist, the tests that use one
#: run on one worker, so that the peer starts once, not once per worker.
SHARED_PEERS = ("local_model",)


def _xdist_group(item: pytest.Item) -> str | None:
    """The worker group of ``item`` under ``--dist loadgroup``, if it needs one: the tests
    of a :data:`SHARED_PEERS` fixture share a worker, and so do those of a module whose
    module-scoped fixture (a fresh clone, a built wheel) must be made once."""
    names = getattr(item, "fixturenames", ())
    for name in SHARED_PEERS:
        if name in names:
            return name
    info = getattr(item, "_fixtureinfo", None)
    for name, definitions in getattr(info, "name2fixturedefs", {}).items():
        if name.startswith("_"):  # pytest's own, e.g. a unittest class's setup
            continue
        if any(d.scope in ("module", "package") for d in definitions):
            return f"module:{item.nodeid.split('::', 1)[0]}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``./dev test`` runs the suite on every core), the ``slow`` tests
    are handed out first, so that the longest ones do not start last and leave the other
    workers idle at the end, and the tests that must share a fixture share a worker
    (:func:`_xdist_group`). A plain run keeps the collection order. Either way every test
    runs once."""
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return
    for item in items:
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Stable, so the same order on every worker, as xdist requires (``./dev test`` passes
    # --no-loadscope-reorder to keep it): ``exclusive`` tests first, while no long test
    # holds the other workers, then the ``slow`` ones.
    items.sort(
        key=lambda item: (
            item.get_closest_marker("exclusive") is None,
            item.get_closest_marker("slow") is None,
        )
    )


@pytest.fixture(autouse=True)
def _exclusive_under_xdist(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``exclusive`` (it bounds wall-clock time or a cost
    ratio) runs while no other worker runs a test: every test holds a shared lock on one
    file of the run, an exclusive one takes it alone. Without xdist, nothing to do."""
    if not hasattr(request.config, "workerinput"):
        yield
        return
    # The workers' temporary directories (popen-gw<N>) share the run's one.
    path = tmp_path_factory.getbasetemp().parent / "exclusive.lock"
    exclusive = request.node.get_closest_marker("exclusive") is not None
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
