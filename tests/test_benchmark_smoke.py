"""Smoke test of benchmarks/actors.py: it runs end to end in --quick mode.

No speed or memory figure is asserted; the benchmark's numbers belong in
docs/performance.md, not in a pass/fail test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "actors.py"


def load_benchmark(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import benchmarks/actors.py by path (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("benchmark_actors", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # msgspec and dataclasses resolve annotations through sys.modules.
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_quick_run_prints_the_tables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmark = load_benchmark(monkeypatch)

    assert benchmark.main(["--quick"]) == 0

    out = capsys.readouterr().out
    assert "| implementation | asks/s | tells/s |" in out
    for label in benchmark.LABELS.values():
        assert f"| {label} |" in out
    assert "### Ratios" in out
    assert "### Targets (agcore_actors)" in out
    assert "PASS" in out or "FAIL" in out
