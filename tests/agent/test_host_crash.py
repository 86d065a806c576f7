"""SIGKILL a bot (a SessionHost on SQLite) between and in the middle of turns, again and
again: on restart every acknowledged turn is there, and any turn cut short is either
absent or closed as interrupted, with a transcript every provider accepts."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import StoreTurns, transcript_errors
from agcore_actors.llm import UserMessage
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.store import messages as sm

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 3


def run_worker(db: Path, turns: int, kill_after: float | None) -> list[tuple[str, int]]:
    """Run the worker; once it has acknowledged a first turn, SIGKILL it after
    ``kill_after`` more seconds; the turns it acknowledged."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.agent.host_worker", str(db), str(turns), str(SESSIONS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert process.stdout is not None
    lines = [process.stdout.readline().decode()]  # waits for the first acknowledged turn
    if kill_after is not None:
        time.sleep(kill_after)
        process.send_signal(signal.SIGKILL)
    lines += process.stdout.read().decode().splitlines()
    process.wait(timeout=120)
    process.stdout.close()
    acked = []
    for line in lines:
        if line.startswith("ACK "):
            _, session, n = line.split()
            acked.append((session, int(n)))
    assert acked, "the worker acknowledged no turn"
    return acked


async def check(db: Path, acked: set[tuple[str, int]]) -> int:
    """Every acknowledged turn present, every transcript valid; the turns repaired."""
    repaired = 0
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(str(db)))
        )
        turns = StoreTurns(store)
        for i in range(SESSIONS):
            session = f"chat-{i}"
            state = await turns.load(session, None)  # repairs an interrupted turn
            repaired += state.repaired_turn is not None
            texts = [m.content for m in state.history if isinstance(m, UserMessage)]
            for s, n in acked:
                if s == session:
                    assert f"turn {n}" in texts, f"acknowledged turn {n} of {s} is lost"
            assert transcript_errors(state.history) == []
            snapshot: sm.SessionSnapshot = await store.ask(sm.ExportSession(session))
            assert snapshot.record.open_turn is None
    return repaired


@pytest.mark.slow
def test_killed_bot_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    rng = random.Random(7)
    acked: set[tuple[str, int]] = set()
    repaired = 0
    for _ in range(8):
        acked |= set(run_worker(db, 10_000, kill_after=rng.uniform(0.05, 0.5)))
        repaired += trio.run(check, db, acked)
    assert len(acked) > 10, "the worker never got going"
    # Most kills land mid-turn (a turn is mostly waiting on the model and the tool).
    assert repaired >= 1, "no kill landed mid-turn: the test did not test that case"
    print(f"{len(acked)} acknowledged turns, {repaired} interrupted turns repaired")
