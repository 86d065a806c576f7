"""Smoke test of benchmarks/tools.py: it runs end to end in --quick mode
(no speed figure is asserted; the numbers belong in docs/performance.md)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.mark.slow
def test_quick_run_prints_the_tables(
    load_benchmark: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_benchmark("tools")
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| 100 |" in out
    assert "| 8 in parallel |" in out
