"""Crash safety: SIGKILL a process mid-stream of writes; nothing it was told
was written is lost, and the file is sound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agcore_actors.memory.lowlevel import KnowledgeStore, SqliteBackend

WRITER = Path(__file__).resolve().parent / "crash_writer.py"
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kill_after", [1, 150])
def test_every_acknowledged_write_survives_sigkill(tmp_path: Path, kill_after: int) -> None:
    db = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acked: list[int] = []
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + 60  # a bound on a hang, not a timing assertion
        while len(acked) < kill_after:
            line = child.stdout.readline()
            if not line:
                pytest.fail(f"writer exited early: {child.wait()} {child.stderr.read()}")  # type: ignore[union-attr]
            acked.append(int(line.split()[1]))
            assert time.monotonic() < deadline, "the writer is too slow"
        # Kill it while it is writing: the loop never pauses between writes.
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    acked.extend(int(line.split()[1]) for line in rest.splitlines() if line.startswith("ack"))
    assert child.returncode == -signal.SIGKILL
    assert acked == list(range(len(acked)))

    store = SqliteBackend(db)
    try:
        assert store.integrity_check() == "ok"
        items = set(store.keys("item:"))
        pages = {e.id: e.title for e in KnowledgeStore(store).get_index()}
    finally:
        store.close()
    for n in acked:
        if n % 2 == 0:
            assert f"item:{n:06d}" in items
        else:
            assert pages.get(f"knowledge_{n:06d}") == f"page {n}"
    # Whatever was written is whole and in order: the pages are a gap-free prefix.
    odd = sorted(int(title.split()[1]) for title in pages.values())
    assert odd == list(range(1, 2 * len(odd), 2))
