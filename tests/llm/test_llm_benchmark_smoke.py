"""Smoke test of benchmarks/llm.py: it runs end to end in --quick mode.

No speed figure is asserted; the numbers belong in docs/performance.md.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


def test_quick_run_prints_the_table(
    load_benchmark: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_benchmark("llm")
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## LLM layer (benchmarks/llm.py)")
    assert "| stream assembly, chunks/s |" in out and "| non-streamed request, µs |" in out
