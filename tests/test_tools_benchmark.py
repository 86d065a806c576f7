"""Smoke test of benchmarks/tools.py: it runs end to end in --quick mode
(no speed figure is asserted; the numbers belong in docs/performance.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "tools.py"


@pytest.mark.slow
def test_quick_run_prints_the_tables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("benchmark_tools", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| 100 |" in out
    assert "| 8 in parallel |" in out
