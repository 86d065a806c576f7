"""Smoke test of benchmarks/llm.py: it runs end to end in --quick mode.

No speed figure is asserted; the numbers belong in docs/performance.md.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "llm.py"


def test_quick_run_prints_the_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("benchmark_llm", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## LLM layer (benchmarks/llm.py)")
    assert "| stream assembly, chunks/s |" in out and "| non-streamed request, µs |" in out
