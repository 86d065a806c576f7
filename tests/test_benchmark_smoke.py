"""Smoke test of benchmarks/actors.py: it runs end to end in --quick mode.

No speed or memory figure is asserted; the benchmark's numbers belong in
docs/performance.md, not in a pass/fail test.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


def test_quick_run_prints_the_tables(
    load_benchmark: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    benchmark = load_benchmark("actors")

    assert benchmark.main(["--quick"]) == 0

    out = capsys.readouterr().out
    assert "| implementation | asks/s | tells/s |" in out
    for label in benchmark.LABELS.values():
        assert f"| {label} |" in out
    assert "### Ratios" in out
    assert "### Targets (agcore_actors)" in out
    assert "PASS" in out or "FAIL" in out
