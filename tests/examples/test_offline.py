"""The examples and the demo run and say what they should."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def test_supervised_counter_example() -> None:
    spec = importlib.util.spec_from_file_location(
        "supervised_counter", ROOT / "examples" / "supervised_counter.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = await module.main()
    assert lines[:2] == ["count: 6", "count after restart: 0"]
    assert "actor counter: running, restarts=1" in lines


def test_cli_demo_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "demo", "--jobs", "12", "--crash-every", "5"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "totals: 10 ok, 2 failed" in done.stdout
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["worker", "actor", "workers", "running", "2"] in rows


def test_cli_demo_rejects_bad_input() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "demo", "--jobs", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "agcore-actors demo: usage: argument --jobs: must be >= 1, not 0\n"


async def test_agent_turn_example() -> None:
    spec = importlib.util.spec_from_file_location("agent_turn", ROOT / "examples" / "agent_turn.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert await module.main() == [
        '[tool] add({"a":17,"b":25})',
        "[tool] -> ok: 42",
        "answer: 17 + 25 = 42.",
        "usage: 2 model calls",
    ]
