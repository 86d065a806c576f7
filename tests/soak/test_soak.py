"""The soak and crash-resume of benchmarks/soak.py at CI size, each in a process of its
own (so its leak counts are its own): under the seeded fault schedule, with sessions
evicted and restored all along, no turn is lost, every transcript is valid, nothing
leaks; SIGKILLed five times (and stopped once gracefully under load) and restarted on one
store, every acknowledged turn is there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOAK = ROOT / "benchmarks" / "soak.py"


def run(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, str(SOAK), *args, "--tmp", str(tmp_path), "--json", str(out)]
    # A bound on a hang, not a timing assertion.
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert out.exists(), done.stderr[-3000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def assert_sound(report: dict[str, Any]) -> None:
    assert report["turns_lost"] == 0, (report["lost_detail"], report["lost_acknowledged"])
    assert report["invalid_transcripts"] == 0, report["invalid_detail"]
    assert report["open_turns"] == 0
    assert report["integrity"] == "ok"
    assert report["children_leaked"] == 0


@pytest.mark.slow
def test_soak_under_faults_and_eviction_loses_nothing_and_leaks_nothing(
    tmp_path: Path,
) -> None:
    sessions, turns = 30, 4
    report = run(
        tmp_path, "soak", "--sessions", str(sessions), "--turns", str(turns),
        "--rate", "0.3", "--max-sessions", "6", "--in-flight", "12",
    )  # fmt: skip
    assert_sound(report)
    for leak in ("tasks_leaked", "fds_leaked", "threads_leaked"):
        assert report[leak] == 0, (leak, report.get("fds_leaked_detail"))
    counts = report["counts"]
    assert sum(counts.get(k, 0) for k in ("completed", "failed", "cancelled")) == sessions * turns
    assert counts["completed"] > counts.get("failed", 0) + counts["cancelled"]
    assert report["acknowledged"] == sessions * turns
    # The pressure was real: sessions came back from the store again and again, and
    # the faults and misbehaving tools were met.
    assert report["host"]["activated"] > 2 * sessions
    assert report["host"]["evicted_cap"] > sessions
    faults = {k for k, v in report["faults"].items() if v and k != "ok"}
    assert len(faults) >= 5, faults
    assert sum(v for k, v in report["tool_results"].items() if k != "ok") > 10
    assert report["passed"]


@pytest.mark.slow
def test_every_acknowledged_turn_survives_five_sigkills_and_restarts(tmp_path: Path) -> None:
    sessions, turns = 8, 6
    report = run(
        tmp_path, "crash", "--sessions", str(sessions), "--turns", str(turns),
        "--kills", "5", "--drains", "1", "--max-sessions", "3", "--in-flight", "4",
    )  # fmt: skip
    assert [k["rc"] for k in report["kills"]] == [-9] * 5
    # The graceful stop under load: sessions still sending were refused (typed), and the
    # host drained within its drain_timeout (5 s).
    (drain,) = report["drains"]
    assert drain["refused_at_shutdown"] > 0 and drain["drained_in_s"] <= 5.5
    assert_sound(report)
    assert report["lost_acknowledged"] == []
    # Every turn was acknowledged by the end (the last worker runs to completion).
    assert report["acknowledged"] == sessions * turns
    assert report["stored"]["turns"] >= sessions * turns
    assert report["passed"]
