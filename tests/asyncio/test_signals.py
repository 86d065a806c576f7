"""Ctrl-C and SIGTERM of an asyncio bot process end both loops in order: the host drains
(a turn in flight is cancelled and committed), then the program exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("sig", "codes"),
    [(signal.SIGTERM, (143,)), (signal.SIGINT, (-signal.SIGINT, 130))],
)
def test_a_signal_drains_the_host_then_ends_the_program(
    sig: signal.Signals, codes: tuple[int, ...]
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.asyncio.signal_worker"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        child.send_signal(sig)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert out.splitlines() == ["turn cancelled", "host stopped"], err
    assert child.returncode in codes, err
