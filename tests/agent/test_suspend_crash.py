"""SIGKILL and suspended turns, with real processes over one SQLite file: a bot killed
while its turn is suspended — on an approval, or on a question its call asked — loses
nothing (another process answers and the turn resumes, the call's kept run once), and a
bot killed mid-tool-batch resumes its turn in a new process without re-running a call
whose result was reported — counted by the tools themselves, in a file
(``tests/agent/suspend_worker.py``)."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import transcript_errors
from agcore_actors.llm import ToolMessage
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.store import messages as sm

REPO = Path(__file__).resolve().parents[2]


def start(db: Path, runs: Path, step: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.agent.suspend_worker", str(db), str(runs), step],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def read_until(proc: subprocess.Popen[str], done: set[str]) -> list[str]:
    """Lines of ``proc`` until every line of ``done`` came (or it ended)."""
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.strip())
        if done <= set(lines):
            return lines
    raise AssertionError(
        f"worker ended early: {lines} / {proc.stderr.read() if proc.stderr else ''}"
    )


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes its pipes
    assert proc.returncode == -signal.SIGKILL


def finish(proc: subprocess.Popen[str]) -> list[str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out.split("\n")


def runs(path: Path) -> collections.Counter[str]:
    return collections.Counter(path.read_text().split()) if path.exists() else collections.Counter()


async def stored(db: Path) -> sm.SessionSnapshot:
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(str(db)))
        )
        snapshot: sm.SessionSnapshot = await store.ask(sm.ExportSession("s"))
        return snapshot


@pytest.mark.parametrize("on", ["approval", "question"])
def test_a_bot_killed_while_its_turn_is_suspended_resumes_it_in_another_process(
    tmp_path: Path, on: str
) -> None:
    db, log = tmp_path / "bot.db", tmp_path / "runs"
    suffix = "-ask" if on == "question" else ""
    bot = start(db, log, "suspend" + suffix)
    read_until(bot, {"SUSPENDED suspended t1-g" + (".e1" if suffix else "")})
    kill(bot)
    assert runs(log) == {"t1-f": 1}
    snapshot = trio.run(stored, db)
    assert snapshot.record.open_turn == "t1" and snapshot.record.pending_calls == ("t1-g",)
    lines = finish(start(db, log, "answer" + suffix))
    assert "ANSWER resumed completed done t1" in lines
    assert "ANSWER duplicate - -" in lines
    assert runs(log) == {"t1-f": 1, "t1-g": 1}  # each call ran once, across two processes
    snapshot = trio.run(stored, db)
    assert snapshot.record.open_turn is None
    messages = [entry.message for entry in snapshot.entries]
    assert transcript_errors(messages) == []


@pytest.mark.parametrize("how", ["resume", "next"])
def test_a_bot_killed_mid_batch_resumes_without_rerunning_a_completed_call(
    tmp_path: Path, how: str
) -> None:
    db, log = tmp_path / "bot.db", tmp_path / "runs"
    bot = start(db, log, "batch")
    read_until(bot, {"FINISHED batch-a", "FINISHED batch-b"})
    assert (tmp_path / "runs.stalled").read_text() == "batch-c"  # c runs, not done
    kill(bot)
    assert runs(log) == {"batch-a": 1, "batch-b": 1}
    snapshot = trio.run(stored, db)
    assert snapshot.record.open_turn == "batch" and snapshot.record.pending_calls == ("batch-c",)
    lines = finish(start(db, log, how))
    # a and b completed before the kill and never ran again; c ran (once) after it.
    if how == "resume":
        assert "RESUMED completed done batch" in lines
        assert runs(log) == {"batch-a": 1, "batch-b": 1, "batch-c": 1}
    else:  # ResumeTurn not asked: the next turn resumed it first
        assert "NEXT completed done batch2" in lines
        done = {"batch-a": 1, "batch-b": 1, "batch-c": 1}
        assert runs(log) == {**done, "batch2-a": 1, "batch2-b": 1, "batch2-c": 1}
    snapshot = trio.run(stored, db)
    messages = [entry.message for entry in snapshot.entries]
    assert transcript_errors(messages) == []
    results = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(results)[:3] == ["batch-a", "batch-b", "batch-c"]
    assert len(results) == len(set(results))  # every call answered once
