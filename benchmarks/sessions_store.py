"""Session store benchmark: loads, lists and turn commits at 100,000 sessions x 20 messages.

One run measures, through a SessionStore actor on a SQLite file (WAL,
``synchronous=FULL``: every reply is fsynced), in a plain ``ActorSystem``:

- ``LoadSession(tail=50)``: record, last messages and facts of a random session;
- ``ListSessions(idle_before=...)``: a page of 100 idle sessions at a random cutoff,
  the first page and a page reached through a cursor;
- ``CommitTurn`` throughput with 1, 100 and 1,000 concurrent sessions, with group commit
  (``max_batch=256``) and with one transaction per request (``max_batch=1``: the same
  store, the same durability, each commit its own transaction and fsync, still off the
  event loop). Each round begins a turn in every session (untimed), then commits them
  all at once (timed): three messages, usage and a fact; at least 4 rounds, so that a
  WAL checkpoint (one every few thousand commits) falls into either mode's timed window
  about as often. The two modes alternate, 5 times, on the same sessions; the table
  shows medians and the median of the per-repetition ratios, so a machine whose load or
  fsync time drifts does not favour either.
- the floors that bound the ratio: one durable transaction that changes one row, the
  rows of one commit written in a batch of 256 straight into the backend (no actor), and
  one ask to a trivial serial actor (1,000 at once). Group commit saves the first per commit;
  it cannot save the other two, so the ratio cannot exceed
  (one transaction each) / (rows + ask). Beside them: the process's CPU µs per commit in
  each mode (wall time on a shared machine says more about the neighbours), and the
  pages (WAL frames) one commit writes in a batch of 256 and in a transaction of its own.

The corpus (each session: 5 turns of user → assistant call → tool result → answer,
idle times spread over 30 days) is generated deterministically and cached under the
system temp directory; every run works on a fresh copy of it.

Run from the repository root::

    python benchmarks/sessions_store.py            # full run (first run builds the corpus)
    python benchmarks/sessions_store.py --quick    # smoke test: 2,000 sessions
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from agcore_actors import Actor, ActorRef, ActorSystem, ChildSpec, Request
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_actors.store import (
    SessionStoreConfig,
    SqliteSessions,
    StoreMsg,
    session_store_spec,
)
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import SqliteSessionBackend

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the corpus lives beside this script

from _sessions_corpus import DAY, EPOCH, SEED, corpus, working_copy

LOAD_GOAL_MS, LIST_GOAL_MS, GROUP_GOAL_RATIO = 1.0, 5.0, 5.0


async def timed_asks(store: ActorRef[StoreMsg], msgs: Sequence[Request[Any]]) -> list[float]:
    out: list[float] = []
    for msg in msgs:
        t = time.perf_counter()
        await store.ask(msg)
        out.append((time.perf_counter() - t) * 1000)
    return out


async def reads(path: Path, sessions: int, n: int) -> list[tuple[str, list[float]]]:
    rng = random.Random(SEED + 1)
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("sessions", backend=SqliteSessions(str(path)))
        )
        ids = [f"chat-{rng.randrange(sessions):07d}" for _ in range(n)]
        await timed_asks(store, [sm.LoadSession(i, tail=50) for i in ids[:50]])  # warm up
        loads = await timed_asks(store, [sm.LoadSession(i, tail=50) for i in ids])
        cutoffs = [EPOCH - rng.uniform(1, 29) * DAY for _ in range(n)]
        firsts = await timed_asks(
            store, [sm.ListSessions(idle_before=c, limit=100) for c in cutoffs]
        )
        pages = [await store.ask(sm.ListSessions(idle_before=c, limit=100)) for c in cutoffs[:n]]
        nexts = await timed_asks(
            store,
            [
                sm.ListSessions(idle_before=c, limit=100, cursor=p.cursor)
                for c, p in zip(cutoffs, pages, strict=True)
            ],
        )
        idle = await timed_asks(
            store, [sm.ListSessions(idle_before=c, status="idle", limit=100) for c in cutoffs]
        )
    return [
        ("LoadSession(tail=50)", loads),
        ("ListSessions(idle_before), first page of 100", firsts),
        ("ListSessions(idle_before), next page by cursor", nexts),
        ("ListSessions(idle_before, status=idle), page of 100", idle),
    ]


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


async def commits(
    path: Path, ids: list[str], rounds: int, max_batch: int, loads: list[float] | None = None
) -> tuple[float, float]:
    """CommitTurn/s, and the process's CPU µs per commit (every thread: the event loop
    and SQLite's worker): each round begins a turn everywhere (untimed), then commits all.

    With ``loads``, one reader loads other sessions (``tail=50``) back to back while the
    commits run, and records how long each load took (ms).
    """
    versions = {}
    spent = cpu = 0.0
    config = SessionStoreConfig(max_batch=max_batch)
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("sessions", backend=SqliteSessions(str(path)), config=config)
        )
        for sid in ids:
            versions[sid] = (await store.ask(sm.LoadSession(sid, tail=0))).record.version

        async def begin(sid: str, turn: str) -> None:
            versions[sid] = (await store.ask(begin_message(sid, turn, versions[sid]))).version

        async def commit(sid: str, turn: str) -> None:
            versions[sid] = (await store.ask(commit_message(sid, turn, versions[sid]))).version

        async def commit_all(turn: str, reading: trio.CancelScope) -> None:
            async with trio.open_nursery() as nursery:
                for sid in ids:
                    nursery.start_soon(commit, sid, turn)
            reading.cancel()

        async def reader(into: list[float]) -> None:
            rng = random.Random(SEED + 3)
            while True:
                msg = sm.LoadSession(f"chat-{rng.randrange(len(ids), 2 * len(ids)):07d}", tail=50)
                t = time.perf_counter()
                await store.ask(msg)
                into.append((time.perf_counter() - t) * 1000)

        for r in range(rounds):
            turn = f"bench-{max_batch}-{time.time_ns()}-{r}"
            async with trio.open_nursery() as nursery:
                for sid in ids:
                    nursery.start_soon(begin, sid, turn)
            started, cpu_started = time.perf_counter(), time.process_time()
            async with trio.open_nursery() as nursery:
                reading = trio.CancelScope()
                nursery.start_soon(commit_all, turn, reading)
                if loads is not None:
                    with reading:
                        await reader(loads)
            spent += time.perf_counter() - started
            cpu += time.process_time() - cpu_started
    return len(ids) * rounds / spent, cpu / (len(ids) * rounds) * 1e6


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


def percentile(values: list[float], p: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * p))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "agcore-sessions-bench",
        help="where the generated corpus is kept between runs",
    )
    parser.add_argument("--reps", type=int, default=None, help="alternating runs per size")
    args = parser.parse_args(argv)
    sessions = args.sessions or (2_000 if args.quick else 100_000)
    per_session = 20
    n_reads = 200 if args.quick else 2_000
    sizes = (1, 10, 100) if args.quick else (1, 100, 1_000)
    reps = args.reps or (1 if args.quick else 5)

    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"trio {trio.__version__}, {os.cpu_count()} cpus, {platform.machine()}, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    source = corpus(args.cache_dir, sessions, per_session)
    with tempfile.TemporaryDirectory(prefix="sessions-bench-") as tmp:
        path = working_copy(source, Path(tmp))
        with contextlib.closing(sqlite3.connect(path)) as conn:
            page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        print(
            f"working copy {path} on {filesystem(path)}, page size {page:,} "
            "(both modes: the store's defaults)"
        )
        size = f"{sessions:,} sessions x {per_session} messages"
        print(f"\n## Session store at {size} (ms per request)\n")
        print("| request | requests | median ms | p95 ms |")
        print("|---|---|---|---|")
        medians: dict[str, float] = {}
        for name, ms in trio.run(reads, path, sessions, n_reads):
            medians[name] = statistics.median(ms)
            print(f"| {name} | {len(ms):,} | {medians[name]:.3f} | {percentile(ms, 0.95):.3f} |")
        most = sizes[-1]
        picked = random.Random(SEED + 2).sample(range(sessions), 2 * most)
        pool = [f"chat-{i:07d}" for i in picked]
        busy: list[float] = []
        trio.run(commits, path, pool[most : 2 * most], 2, 256, busy)  # rate: not reported
        print(
            f"| LoadSession(tail=50) while {most:,} sessions commit (group commit) "
            f"| {len(busy):,} | {statistics.median(busy):.3f} | {percentile(busy, 0.95):.3f} |"
        )
        print(
            f"\n## CommitTurn throughput (commits/s, synchronous=FULL; median of {reps} "
            "alternating runs)\n"
        )
        print(
            "| concurrent sessions | group commit (max_batch=256) | one transaction each "
            "(max_batch=1) | ratio | ratio per run |"
        )
        print("|---|---|---|---|---|")
        per_commit: dict[int, tuple[float, float]] = {}
        floors: list[tuple[float, float, float, float, float, float]] = []
        cpu_group: list[float] = []  # at the largest size
        cpu_each: list[float] = []
        ratio = 0.0
        for n in sizes:
            ids = pool[:n]
            rounds = max(4, min(100, 500 // n))
            group: list[float] = []
            each: list[float] = []
            for rep in range(reps):
                for batch in (256, 1) if rep % 2 == 0 else (1, 256):
                    rate, used = trio.run(commits, path, ids, rounds, batch)
                    (group if batch == 256 else each).append(rate)
                    (cpu_group if batch == 256 else cpu_each).append(used)
                if n == most:  # the floors, in the same conditions as the rates
                    floors.append((*sqlite_floors(path, ids), trio.run(ask_floor, n, 3)))
            if n != most:
                cpu_group.clear()
                cpu_each.clear()
            ratios = [g / e for g, e in zip(group, each, strict=True)]
            ratio = statistics.median(ratios)
            g, e = statistics.median(group), statistics.median(each)
            per_commit[n] = (1e6 / g, 1e6 / e)
            listed = ", ".join(f"{r:.1f}" for r in ratios)
            print(f"| {n:,} | {g:,.0f} | {e:,.0f} | {ratio:.1f}x | {listed} |")
    txn, rows, rows_cpu, pages_grouped, pages_alone, ask = (
        statistics.median(f[i] for f in floors) for i in range(6)
    )
    grouped, each_one = per_commit[most]
    # Per repetition: that run's one-transaction-each cost over the floors measured after it.
    ceiling = statistics.median(1e6 / e / (f[1] + f[5]) for e, f in zip(each, floors, strict=True))
    print(f"\n## What bounds the ratio at {most:,} sessions (µs per commit, medians)\n")
    print("| cost | µs |")
    print("|---|---|")
    print(
        f"| one durable transaction writing one row (BEGIN, INSERT, COMMIT + fsync) | {txn:,.0f} |"
    )
    print(
        f"| one commit's rows, in batches of 256 straight into the backend (no actor) "
        f"| {rows:,.0f} (CPU {rows_cpu:,.0f}) |"
    )
    kib = (page + 24) / 1024
    print(
        f"| pages (WAL frames) one commit writes: in a batch of 256 / alone "
        f"| {pages_grouped:.1f} / {pages_alone:.1f} "
        f"({pages_grouped * kib:.1f} / {pages_alone * kib:.1f} KiB) |"
    )
    print(f"| one ask to a trivial serial actor, {most:,} at once | {ask:,.0f} |")
    cg, ce = statistics.median(cpu_group), statistics.median(cpu_each)
    print(f"| CommitTurn with group commit (measured above) | {grouped:,.0f} (CPU {cg:,.0f}) |")
    print(
        f"| CommitTurn, one transaction each (measured above) | {each_one:,.0f} (CPU {ce:,.0f}) |"
    )
    load = medians["LoadSession(tail=50)"]
    listing = medians["ListSessions(idle_before), first page of 100"]
    print("\n### Goals\n")
    verdict = _verdict(load <= LOAD_GOAL_MS)
    print(f"- LoadSession(tail=50) median {load:.3f} ms: {verdict} ≤ {LOAD_GOAL_MS} ms")
    verdict = _verdict(listing <= LIST_GOAL_MS)
    print(f"- ListSessions page of 100 median {listing:.3f} ms: {verdict} ≤ {LIST_GOAL_MS} ms")
    print(
        f"- group commit at {most:,} sessions is {ratio:.1f}x one transaction each: "
        f"{_verdict(ratio >= GROUP_GOAL_RATIO)} ≥ {GROUP_GOAL_RATIO:.0f}x. The ceiling, a "
        f"store costing nothing beyond the rows and the ask: {ceiling:.1f}x"
    )
    print(f"- load average {os.getloadavg()[0]:.1f} at the end")
    return 0


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


if __name__ == "__main__":
    sys.exit(main())
