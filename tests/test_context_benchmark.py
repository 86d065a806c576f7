"""Smoke test of benchmarks/context.py (no figure asserted: they go to docs/performance.md)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


def test_quick_run_prints_the_table(
    load_benchmark: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_benchmark("context")
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for row in ("| heuristic estimate |", "| microcompact |", "| Compact ask"):
        assert row in out
