"""Smoke test of benchmarks/memory.py: it runs end to end in --quick mode.

No speed figure is asserted; the numbers belong in docs/performance.md.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "memory.py"


def test_quick_run_prints_the_tables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = importlib.util.spec_from_file_location("benchmark_memory", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)

    argv = ["--quick", "--pages", "300", "--cache-dir", str(tmp_path)]
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    assert "| FTS5 bm25() top-10 (raw query) |" in out
    assert "| MemoryRetriever dice top-10 (seed scan) |" in out
    assert "| SqliteStore FULL, 1 put per transaction |" in out
    assert list(tmp_path.glob("corpus-*-300.db"))  # cached for the next run
    assert module.main(argv) == 0  # and reused
    assert "building" not in capsys.readouterr().out
