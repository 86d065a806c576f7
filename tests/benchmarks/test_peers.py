"""benchmarks/peers.py runs end to end with tiny numbers, without the peers' venvs.

Only agcore-actors and the raw floors run here (the peers' venvs are never made by the
test suite); the output must say that the run is partial rather than pass it off as a
full comparison. No figure is asserted.
"""

from __future__ import annotations

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
