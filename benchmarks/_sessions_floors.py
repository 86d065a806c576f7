"""The session store benchmark's workload requests and the floors that bound its ratio.

The requests: a turn's ``BeginTurn`` (one user message) and ``CommitTurn`` (a tool call,
its result and the answer, usage and a fact). The floors: one durable one-row transaction,
a commit's rows written straight into the backend in batches, the WAL pages a commit
writes, and one ask to a trivial serial actor (see ``sessions_store.py``).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from agcore_actors import Actor, ActorSystem, ChildSpec, Request
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import SqliteSessionBackend


def begin_message(sid: str, turn: str, version: int) -> sm.BeginTurn:
    return sm.BeginTurn(
        session=sid, turn=turn, expected_version=version, messages=[UserMessage("q")]
    )


def commit_message(sid: str, turn: str, version: int) -> sm.CommitTurn:
    """A turn's end: a tool call, its result and the answer, usage and a fact."""
    call = f"{sid}-{turn}"
    return sm.CommitTurn(
        session=sid,
        turn=turn,
        expected_version=version,
        messages=[
            AssistantMessage(tool_calls=[ToolCall(call, FunctionCall("lookup", "{}"))]),
            ToolMessage("result " * 20, call),
            AssistantMessage("answer " * 20),
        ],
        usage_delta=Usage(900, 120, 300, 0, 40),
        facts_set={"last": turn},
    )


class Ping(Request[int], frozen=True):
    n: int


class Echo(Actor[Ping]):
    """A trivial serial actor (as the store is): the runtime's own cost of an ask."""

    async def handle(self, msg: Ping) -> int:
        return msg.n


async def ask_floor(n: int, reps: int) -> float:
    """Median µs per ask, ``n`` concurrent asks to :class:`Echo`."""
    out: list[float] = []
    async with ActorSystem() as system:
        echo = await system.root.start_child(ChildSpec("echo", Echo, mailbox_size=4096))
        for _ in range(reps):
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for i in range(n):
                    nursery.start_soon(echo.ask, Ping(i))
            out.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(out)


def sqlite_floors(path: Path, ids: list[str]) -> tuple[float, float, float, float, float]:
    """µs of one durable transaction writing one row; µs (wall, then CPU) of one commit's
    rows written in batches of 256 straight into the backend (no actor, no thread hop);
    the pages (WAL frames) one commit writes in such a batch, and alone in a transaction
    of its own."""
    backend = SqliteSessionBackend(path)
    conn = backend.connection
    versions = {sid: version(backend, sid) for sid in ids}
    wal = Path(f"{path}-wal")
    frame = conn.execute("PRAGMA page_size").fetchone()[0] + 24

    def run(
        op: Callable[..., Any],
        make: Callable[[str, str, int], Any],
        turn: str,
        sessions: Sequence[str] = ids,
        size: int = 256,
    ) -> None:
        for first in range(0, len(sessions), size):
            chunk = sessions[first : first + size]
            now = time.time()
            batch = [
                functools.partial(op, backend, make(sid, turn, versions[sid]), now) for sid in chunk
            ]
            for sid, result in zip(chunk, backend.run_batch(batch, True), strict=True):
                versions[sid] = result.unwrap().version

    try:
        started = time.perf_counter()
        for i in range(100):  # a changed value: SQLite skips writing an unchanged row
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('floor', ?)", (str(i),)
            )
            conn.execute("COMMIT")
        txn = (time.perf_counter() - started) / 100 * 1e6
        turn = f"floor-{time.time_ns()}"
        run(ops.begin, begin_message, turn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL grows from 0 below
        started, cpu_started = time.perf_counter(), time.process_time()
        run(ops.commit, commit_message, turn)
        rows = (time.perf_counter() - started) / len(ids) * 1e6
        rows_cpu = (time.process_time() - cpu_started) / len(ids) * 1e6
        pages_grouped = wal.stat().st_size / frame / len(ids)
        alone = ids[:50]  # each commit in a transaction of its own (50: fsyncs are slow)
        turn = f"floor-{time.time_ns()}"
        run(ops.begin, begin_message, turn, alone)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        run(ops.commit, commit_message, turn, alone, size=1)
        pages_alone = wal.stat().st_size / frame / len(alone)
    finally:
        backend.close()
    return txn, rows, rows_cpu, pages_grouped, pages_alone


def version(backend: SqliteSessionBackend, sid: str) -> int:
    record = backend.record(sid)
    assert record is not None, sid
    return record.version


def filesystem(path: Path) -> str:
    """The type and device of the mount holding ``path`` (an fsync on tmpfs costs
    nothing: the one-transaction-each figure would then mean little)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "an unknown file system"
    best = ("", "?", "?")
    resolved = str(path.resolve())
    for line in mounts:
        device, point, kind = line.split()[:3]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, kind, device)
    return f"{best[1]} ({best[2]} at {best[0]})"
