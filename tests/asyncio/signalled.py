"""A signal worker of the embedding tests (asyncio and blocking faces) run as a child
process and sent a signal once it is ready."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def signalled(worker: str, sig: signal.Signals) -> tuple[int, str, str]:
    """Run ``python -m <worker>`` from the repository root, send it ``sig`` once it has
    printed "ready", and return its exit code, the rest of its output and its errors (it
    is killed if it outlives 60 s)."""
    child = subprocess.Popen(
        [sys.executable, "-m", worker],
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
    return child.returncode, out, err
