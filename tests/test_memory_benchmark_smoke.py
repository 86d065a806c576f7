"""Smoke test of benchmarks/memory.py: it runs end to end in --quick mode.

No speed figure is asserted; the numbers belong in docs/performance.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def test_quick_run_prints_the_tables(
    load_benchmark: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = load_benchmark("memory")

    argv = ["--quick", "--pages", "300", "--cache-dir", str(tmp_path)]
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    assert "| FTS5 bm25() top-10 (raw query) |" in out
    assert "| MemoryRetriever dice top-10 (seed scan) |" in out
    assert "| SqliteStore FULL, 1 put per transaction |" in out
    assert list(tmp_path.glob("corpus-*-300.db"))  # cached for the next run
    assert module.main(argv) == 0  # and reused
    assert "building" not in capsys.readouterr().out
