"""Every example is run by a test of this package."""

from __future__ import annotations

from pathlib import Path

from tests.examples.model import EXAMPLES

HERE = Path(__file__).resolve().parent


def test_every_example_is_run_by_a_test() -> None:
    scripts = {p.stem for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")}
    tests = "\n".join(p.read_text() for p in HERE.glob("test_*.py") if p.name != "test_coverage.py")
    unrun = sorted(name for name in scripts if f'"{name}' not in tests)
    assert unrun == []
    assert len(scripts) >= 12
