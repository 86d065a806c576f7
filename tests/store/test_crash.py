"""Crash safety: a process running turns is SIGKILLed at random points, 30 times over
one database; after each kill every acknowledged write is there, nothing half-written
is, an open turn closes with RepairInterrupted into a valid transcript, and the file is
sound. Each new process first repairs what the previous one left open. On SQLite, and
on the real PostgreSQL server (``tests/postgres_fixture.py``)."""

from __future__ import annotations

import functools
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec
import pytest

from agcore_actors.llm import Message, ToolMessage
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store._postgres import PostgresSessionBackend
from agcore_actors.store.lowlevel import Backend, SqliteSessionBackend
from tests.store.helpers import problems, unanswered

WRITER = Path(__file__).resolve().parent / "crash_writer.py"
REPO = Path(__file__).resolve().parents[2]
ROUNDS = 30
_messages = msgspec.json.Decoder(list[Message])


class Expected:
    """What the acknowledgements promise about one session."""

    def __init__(self) -> None:
        self.log: list[Message] = []  # every acknowledged message
        self.version = 0
        self.pending: list[Message] | None = None  # the write sent but not acknowledged

    def tried(self, kind: str, messages: list[Message]) -> None:
        if kind == "repair":
            messages = [
                ToolMessage("Error: tool call interrupted", c) for c in unanswered(self.log)
            ]
        self.pending = messages

    def acked(self, version: int) -> None:
        assert self.pending is not None and version > self.version
        self.log.extend(self.pending)
        self.version, self.pending = version, None

    def settle(self, stored: list[Message], version: int) -> None:
        """Check the stored log against the promises; adopt it as the new truth."""
        if stored == self.log:
            assert version == self.version
        else:  # the write in flight was committed, its ack lost in the kill
            assert self.pending is not None and stored == self.log + self.pending, (
                f"stored {len(stored)} messages, acknowledged {len(self.log)}"
            )
            assert version == self.version + 1
        self.log, self.version, self.pending = stored, version, None


def open_backend(db: Path | str) -> Backend:
    """The backend of ``db``: a SQLite file, or a ``postgresql://`` URL."""
    if isinstance(db, str):
        return PostgresSessionBackend(db)
    return SqliteSessionBackend(db)


def run_round(
    db: Path | str,
    seed: int,
    kill_after: int,
    sessions: dict[str, Expected],
    pages: int | None = None,
) -> bool:
    """Run a writer until it has acknowledged ``kill_after`` writes, then SIGKILL it; with
    ``pages`` (its store's ``checkpoint_pages``), at the moment a checkpoint has begun
    copying. Whether the kill landed in a checkpoint."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    extra = [] if pages is None else [str(pages)]
    args = [sys.executable, str(WRITER), str(db), str(seed), *extra]
    lines: list[str] = []
    enough = threading.Event()
    in_checkpoint = False
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        out = child.stdout

        def read() -> None:  # the writer never waits for a full pipe
            acks = 0
            for line in out:
                lines.append(line)
                acks += line.startswith("ack ")
                if acks >= kill_after:
                    enough.set()
            enough.set()  # the writer exited

        reader = threading.Thread(target=read)
        reader.start()
        try:
            assert enough.wait(120), "the writer is too slow"  # a bound on a hang
            if child.poll() is not None:
                pytest.fail(f"writer exited early: {child.wait()} {child.stderr.read()}")
            if pages is not None:
                assert isinstance(db, Path)
                in_checkpoint = wait_for_a_checkpoint(db)
            child.send_signal(signal.SIGKILL)  # mid-stream: the writer never pauses
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=60)
            reader.join(timeout=60)
    assert child.returncode == -signal.SIGKILL
    for line in lines:
        if line.endswith("\n"):  # a line cut by the kill promises nothing
            handle(line, sessions)
    return in_checkpoint


def wait_for_a_checkpoint(db: Path, seconds: float = 10.0) -> bool:
    """Wait until a checkpoint of ``db`` has begun copying frames and not finished: the
    WAL-index's ``nBackfillAttempted`` moved and is ahead of ``nBackfill``
    (https://sqlite.org/walformat.html); False if none began within ``seconds``."""
    fd = os.open(f"{db}-shm", os.O_RDONLY)
    try:

        def marks() -> tuple[int, int]:
            header = os.pread(fd, 136, 0)
            return struct.unpack_from("=I", header, 128)[0], struct.unpack_from("=I", header, 96)[0]

        first = marks()[0]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            attempted, backfilled = marks()
            if attempted != first and attempted > backfilled:
                return True
        return False
    finally:
        os.close(fd)


def handle(line: str, sessions: dict[str, Expected]) -> int:
    parts = line.rstrip("\n").split(" ", 3)
    if parts[0] == "try":
        sessions.setdefault(parts[1], Expected()).tried(parts[2], _messages.decode(parts[3]))
    elif parts[0] == "ack":
        sessions[parts[1]].acked(int(parts[2]))
        return 1
    return 0


def check(db: Path | str, sessions: dict[str, Expected]) -> None:
    backend = open_backend(db)
    try:
        if isinstance(backend, SqliteSessionBackend):
            assert backend.integrity_check() == "ok"
        for sid, expected in sessions.items():
            record = backend.record(sid)
            if record is None:  # created by a BeginTurn that never committed
                assert expected.version == 0 and not expected.log
                expected.pending = None
                continue
            stored = backend.messages(sid, 0, record.last_index + 1)
            expected.settle(stored, record.version)
            if record.open_turn is None:
                assert not problems(stored), problems(stored)
                continue
            # An open turn: RepairInterrupted makes it valid (checked on a copy of the
            # decision; the next writer process repairs it for real).
            closed = stored + [
                ToolMessage("Error: tool call interrupted", c) for c in record.pending_calls
            ]
            assert not problems(closed), problems(closed)
            assert record.pending_calls == tuple(unanswered(stored))
    finally:
        backend.close()


@pytest.mark.slow
def test_every_acknowledged_turn_survives_sigkill_and_no_half_turn_is_visible(
    tmp_path: Path,
) -> None:
    db = tmp_path / "crash.db"
    rng = random.Random(20260613)
    sessions: dict[str, Expected] = {}
    for round in range(ROUNDS):
        run_round(db, round, rng.randint(1, 400), sessions)
        check(db, sessions)
    repair_open_turns(db)
    assert sum(len(e.log) for e in sessions.values()) > ROUNDS


@pytest.mark.slow
def test_every_acknowledged_turn_survives_sigkill_on_postgres(postgres_url: str) -> None:
    """The same 30 kills against the real PostgreSQL server: a killed client's open
    transaction is rolled back by the server, every acknowledged commit is there."""
    rng = random.Random(20261128)
    sessions: dict[str, Expected] = {}
    for round in range(ROUNDS):
        run_round(postgres_url, round, rng.randint(1, 400), sessions)
        check(postgres_url, sessions)
    repair_open_turns(postgres_url)
    assert sum(len(e.log) for e in sessions.values()) > ROUNDS


@pytest.mark.slow
def test_every_acknowledged_turn_survives_sigkill_during_checkpoints(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    rng = random.Random(20261124)
    sessions: dict[str, Expected] = {}
    in_checkpoint = 0
    for round in range(ROUNDS):
        # 16 pages: a checkpoint every few commits; the kill waits for one to begin copying.
        hit = run_round(db, round, rng.randint(1, 200), sessions, 16)
        in_checkpoint += hit
        check(db, sessions)
    repair_open_turns(db)
    assert sum(len(e.log) for e in sessions.values()) > ROUNDS
    assert in_checkpoint >= ROUNDS // 2, f"only {in_checkpoint} kills landed in a checkpoint"


def repair_open_turns(db: Path | str) -> None:
    """Close every open turn; then every stored transcript must be valid."""
    backend = open_backend(db)
    try:
        for record in backend.page(None, "running", None, 1000):
            msg = sm.RepairInterrupted(record.id, record.open_turn or "", record.version)
            (done,) = backend.run_batch([functools.partial(ops.repair, backend, msg, 0.0)], True)
            done.unwrap()
        for record in backend.page(None, None, None, 1000):
            assert record.open_turn is None
            assert not problems(backend.messages(record.id, 0, record.last_index + 1))
    finally:
        backend.close()
