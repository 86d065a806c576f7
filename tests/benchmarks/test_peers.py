"""benchmarks/peers.py runs end to end with tiny numbers, without the peers' venvs.

Only agcore-actors and the raw floors run here (the peers' venvs are never made by the
test suite); the output must say that the run is partial rather than pass it off as a
full comparison. No figure is asserted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


@pytest.mark.slow
def test_quick_run_without_peer_venvs_says_it_is_partial(
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    module = load_benchmark("peers")
    argv = ["--quick", "--no-install", "--venvs", str(tmp_path / "none")]
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    assert "**PARTIAL RUN**: openai-agents, pydantic-ai not measured" in out
    assert "| sessions | mode | raw | raw-asyncio | agcore | agcore ÷ best peer |" in out
    for row in ("| 1 | plain |", "| 5 | streamed |", "| agcore evicted |"):
        assert row in out
    assert "Not checked against the peers: partial run." in out
    assert "all met" not in out
    assert not (tmp_path / "none").exists(), "--no-install made a venv"


def test_a_peer_venv_counts_only_with_the_pinned_versions(
    load_benchmark: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    module = load_benchmark("peers")
    python = tmp_path / "pydantic-ai" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.touch()
    assert module.venv_python(tmp_path, "pydantic-ai") is None  # no pins recorded
    (tmp_path / "pydantic-ai" / "pins.txt").write_text("pydantic-ai-slim[openai]==0.0.1")
    assert module.venv_python(tmp_path, "pydantic-ai") is None  # other pins
    pins = "\n".join(module.PEERS["pydantic-ai"][1])
    (tmp_path / "pydantic-ai" / "pins.txt").write_text(pins)
    assert module.venv_python(tmp_path, "pydantic-ai") == python


def _run(framework: str, sessions: int, mode: str, ms: float, rss_mb: int) -> str:
    turns = sessions * 3
    return json.dumps(
        {"framework": framework, "sessions": sessions, "mode": mode, "turns": turns,
         "cpu": ms * turns / 1000, "wall": 1.0, "peak_rss": rss_mb * 1_000_000}
    )  # fmt: skip


def test_saved_runs_report_every_missed_goal(
    load_benchmark: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    module = load_benchmark("peers")
    venvs = tmp_path / "venvs"
    for name, (_, pins) in module.PEERS.items():
        (venvs / name / "bin").mkdir(parents=True)
        (venvs / name / "bin" / "python").touch()
        (venvs / name / "pins.txt").write_text("\n".join(pins))
    saved = tmp_path / "runs.jsonl"
    lines = [
        _run("raw", 100, "plain", 1.0, 40),
        _run("agcore", 100, "plain", 2.0, 60),  # 2x the floor
        _run("openai-agents", 100, "plain", 10.0, 100),
        _run("pydantic-ai", 100, "plain", 6.0, 50),  # best peer: 2/6 > 1/4; less RSS
    ]
    saved.write_text("\n".join(lines) + "\n")
    argv = ["--no-install", "--venvs", str(venvs), "--load", str(saved)]
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    assert "| 100 | plain | 1.00 | — | 2.00 | 10.00 | 6.00 | 0.333 | 2.00 |" in out
    assert "- MISSED: CPU vs best peer at 100 plain: 0.333 > 0.25" in out
    assert "- MISSED: CPU vs raw floor at 100 plain: 2.00 > 1.5" in out
    assert "- MISSED: peak RSS at 100: agcore 60 MB >= best peer" in out
    assert "PARTIAL" not in out and "all met" not in out
