"""Every benchmark runs end to end in ``--quick`` mode and prints its tables.

No speed or memory figure is asserted: the numbers belong in docs/performance.md, not in
a pass/fail test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

# benchmark -> (extra argv, lines its output must contain); "{tmp}" is the test's tmp_path.
CASES: dict[str, tuple[list[str], list[str]]] = {
    "actors": (
        [],
        ["| implementation | asks/s | tells/s |", "### Ratios", "### Targets (agcore_actors)"],
    ),
    "durable": (
        [],
        ["| store | mode | CPU ms/turn | vs plain |", "| sqlite | suspend + answer |"],
    ),
    "embedding": ([], ["| face | callers at once | CPU µs/turn | vs trio |", "| asyncio | 50 |"]),
    "context": ([], ["| heuristic estimate |", "| microcompact |", "| Compact ask"]),
    "llm": (
        [],
        [
            "## LLM layer (benchmarks/llm.py)",
            "| stream assembly, chunks/s |",
            "| non-streamed request, µs |",
        ],
    ),
    "memory": (
        ["--pages", "300", "--cache-dir", "{tmp}"],
        [
            "| FTS5 bm25() top-10 (raw query) |",
            "| MemoryRetriever dice top-10 (seed scan) |",
            "| SqliteBackend FULL, 1 put per transaction |",
            "| `Get` sent while that `PutPage` is being written |",
        ],
    ),
    "ownership": (
        [],
        ["| store | workload | turns | plain | clustered | ratio |", "| memory | cold |"],
    ),
    "retrieval_embeddings": (
        ["--docs-at", "worktree"],  # a shallow clone may lack the pinned commit
        ["| mode | recall@5 | MRR@10 | ms/query |", "| bm25+emb w=0.5 |"],
    ),
    "serve_load": ([], ["| clients | turns/s |", "| 32 |"]),
    "tools": ([], ["| 100 |", "| 8 in parallel |"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_quick_run_prints_the_tables(
    name: str,
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    extra, expected = CASES[name]
    argv = ["--quick", *(arg.replace("{tmp}", str(tmp_path)) for arg in extra)]
    assert load_benchmark(name).main(argv) == 0
    out = capsys.readouterr().out
    missing = [line for line in expected if line not in out]
    assert not missing, f"benchmarks/{name}.py --quick did not print {missing}"


def test_memory_benchmark_reuses_its_cached_corpus(
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    module = load_benchmark("memory")
    argv = ["--quick", "--pages", "300", "--cache-dir", str(tmp_path)]
    assert module.main(argv) == 0
    assert list(tmp_path.glob("corpus-*-300.db"))
    capsys.readouterr()
    assert module.main(argv) == 0
    assert "building" not in capsys.readouterr().out


@pytest.mark.slow
def test_memory_postgres_quick_run_prints_the_ratio_and_the_agreement(
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    postgres_database: str,
) -> None:
    """On the run's own database (its corpus schema goes with it)."""
    argv = ["--quick", "--pages", "300", "--cache-dir", str(tmp_path), "--url", postgres_database]
    assert load_benchmark("memory_postgres").main(argv) == 0
    out = capsys.readouterr().out
    assert "| store search (ids, scores) |" in out
    assert "Same top-10 scores on both backends: 20 of 20 queries." in out
