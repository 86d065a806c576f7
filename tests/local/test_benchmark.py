"""benchmarks/local_model.py runs end to end with --quick against the real small model
(no figure is asserted: they belong in docs/performance.md)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from tests.peers.local_model import small_model_config

pytestmark = pytest.mark.slow


def test_the_correctness_benchmark_runs_and_prints_its_table(
    load_benchmark: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    small_model_config()  # the peer is installed, or a clear error naming the installer
    assert load_benchmark("local_model").main(["--model", "small", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "| model | mode | full tool turns | right first call | no-tool turns |" in out
    assert "| qwen2.5-coder-0.5b | non-streamed | " in out
