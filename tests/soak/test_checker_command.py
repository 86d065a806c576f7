"""``benchmarks/soak.py checker``: the concurrency checker of
tests/agent/test_host_checker.py run for as many scenarios as asked, from a seed, in a
pytest process of its own; a wrong fault or store name is refused before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOAK = ROOT / "benchmarks" / "soak.py"


def soak(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # A bound on a hang, not a timing assertion.
    return subprocess.run(
        [sys.executable, str(SOAK), *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_the_checker_command_runs_the_checker_from_a_seed_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = soak(
        "checker", "--examples", "3", "--faults", "cancel,executor", "--stores", "memory",
        "--seed", "5", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    report = json.loads(out.read_text())
    assert report["passed"] is True
    assert (report["examples_per_store"], report["faults"], report["seed"]) == (
        3,
        "cancel,executor",
        5,
    )
    assert report["stores"] == ["memory"]
    assert "1 passed, 1 deselected" in report["summary"]


def test_the_checker_command_refuses_an_unknown_fault_or_store() -> None:
    for args in (("--faults", "cancel,typo"), ("--stores", "postgres")):
        done = soak("checker", "--examples", "1", *args)
        assert done.returncode == 2
        assert "choose from" in done.stderr
