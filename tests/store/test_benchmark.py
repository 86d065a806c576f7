"""``benchmarks/sessions_store.py --quick`` runs end to end and prints its tables (no speed is
asserted: the figures belong in docs/performance.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


@pytest.mark.slow
def test_quick_run_prints_the_tables(
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    bench = load_benchmark("sessions_store")
    assert bench.main(["--quick", "--sessions", "500", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for line in [
        "| LoadSession(tail=50) |",
        "| ListSessions(idle_before), first page of 100 |",
        "## Turn throughput, every session's turns back to back",
        "## CommitTurn throughput in commit rounds, all sessions in lockstep",
        "| concurrent sessions | group commit (max_batch=256) | one transaction each",
        "| 1 | ",
        "| 100 | ",
        "| one ask to a trivial serial actor",
        "| pages (WAL frames) one commit writes",
        "### Goals",
        "turns back to back, is",
        "in commit rounds (lockstep) it is",
    ]:
        assert line in out
    # Two throughput tables, each with a row per size.
    assert out.count("| 100 | ") == 2


@pytest.mark.slow
def test_postgres_quick_run_prints_its_table(
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    postgres_database: str,
) -> None:
    bench = load_benchmark("store_postgres")
    assert bench.main(["--quick", "--turns", "2", "--url", postgres_database]) == 0
    out = capsys.readouterr().out
    for line in ["| 1 | sqlite |", "| 1 | postgres |", "| 100 | postgres fenced |"]:
        assert line in out
