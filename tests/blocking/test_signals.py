"""Ctrl-C of a script that uses the blocking host: the turn it waits for is cancelled and
committed before KeyboardInterrupt comes out, then the host stops, then the script ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_commits_the_turn_then_stops_the_host_then_ends_the_script() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.blocking.signal_worker"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert out.splitlines() == ["interrupted: running None, turns 1", "host stopped"], err
    assert child.returncode in (-signal.SIGINT, 130), err
    assert err.rstrip().endswith("KeyboardInterrupt")
