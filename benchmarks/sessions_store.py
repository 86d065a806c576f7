"""Session store benchmark: loads, lists and turn commits at 100,000 sessions x 20 messages.

One run measures, through a SessionStore actor on a SQLite file (WAL,
``synchronous=FULL``: every reply is fsynced), in a plain ``ActorSystem``:

- ``LoadSession(tail=50)``: record, last messages and facts of a random session;
- ``ListSessions(idle_before=...)``: a page of 100 idle sessions at a random cutoff,
  the first page and a page reached through a cursor;
- turn throughput with 1, 100 and 1,000 concurrent sessions, with group commit
  (``max_batch=256``) and with one transaction per request (``max_batch=1``: the same
  store, the same durability, each request its own transaction and fsync, still off the
  event loop). Two ways:

  - **turns back to back** (the goal's figure): every session runs its turns one after
    the other, as a host's sessions do, each a ``BeginTurn`` (a user message) then a
    ``CommitTurn`` (a tool call, its result and the answer, usage and a fact); every
    request is timed, WAL checkpoints included. A turn is one commit, so turns/s is
    CommitTurn/s.
  - **commit rounds**: each round begins a turn in every session (untimed), then commits
    them all at once (timed); at least 4 rounds. All sessions move in lockstep, so the
    event loop spends the start of every round sending 1,000 requests while the writer
    waits (it cannot start a batch while the loop holds the GIL): a worst case for
    group commit, which this table shows beside the other.

  The two modes alternate, 5 times, on the same sessions; the tables show medians and the
  median of the per-repetition ratios, so a machine whose load or fsync time drifts does
  not favour either.
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
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem, Request
from agcore_actors.store import (
    SessionStoreConfig,
    SqliteSessions,
    StoreMsg,
    session_store_spec,
)
from agcore_actors.store import messages as sm

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the corpus lives beside this script

from _sessions_corpus import DAY, EPOCH, SEED, corpus, working_copy
from _sessions_floors import ask_floor, begin_message, commit_message, filesystem, sqlite_floors

LOAD_GOAL_MS, LIST_GOAL_MS, GROUP_GOAL_RATIO = 1.0, 5.0, 5.0
GROUP, EACH = 256, 1  # max_batch of the two modes


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


async def turns(
    path: Path, ids: list[str], per_session: int, max_batch: int
) -> tuple[float, float]:
    """Turns/s, and the process's CPU µs per turn, with every session running
    ``per_session`` turns back to back (a BeginTurn, then a CommitTurn, then the next)."""
    config = SessionStoreConfig(max_batch=max_batch)
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("sessions", backend=SqliteSessions(str(path)), config=config)
        )
        versions = [(await store.ask(sm.LoadSession(sid, tail=0))).record.version for sid in ids]
        prefix = f"loop-{max_batch}-{time.time_ns()}"

        async def session(sid: str, version: int) -> None:
            for t in range(per_session):
                turn = f"{prefix}-{t}"
                version = (await store.ask(begin_message(sid, turn, version))).version
                version = (await store.ask(commit_message(sid, turn, version))).version

        started, cpu_started = time.perf_counter(), time.process_time()
        async with trio.open_nursery() as nursery:
            for sid, version in zip(ids, versions, strict=True):
                nursery.start_soon(session, sid, version)
        spent, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    n = len(ids) * per_session
    return n / spent, cpu / n * 1e6


def alternate(
    measure: Callable[[Path, list[str], int, int], Awaitable[tuple[float, float]]],
    path: Path,
    ids: list[str],
    size: int,
    reps: int,
    after: Callable[[], None] | None = None,
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(rate, CPU µs) of each repetition in group mode and in one-transaction mode, the
    two alternating (group first on even repetitions); ``after`` runs after each."""
    group: list[tuple[float, float]] = []
    each: list[tuple[float, float]] = []
    for rep in range(reps):
        for batch in (GROUP, EACH) if rep % 2 == 0 else (EACH, GROUP):
            (group if batch == GROUP else each).append(trio.run(measure, path, ids, size, batch))
        if after is not None:
            after()
    return group, each


def throughput_row(
    n: int, group: list[tuple[float, float]], each: list[tuple[float, float]]
) -> float:
    """Print one table row; the median of the per-repetition ratios."""
    ratios = [g[0] / e[0] for g, e in zip(group, each, strict=True)]
    ratio = statistics.median(ratios)
    g, e = statistics.median(r for r, _ in group), statistics.median(r for r, _ in each)
    g_cpu, e_cpu = statistics.median(c for _, c in group), statistics.median(c for _, c in each)
    listed = ", ".join(f"{r:.1f}" for r in ratios)
    print(
        f"| {n:,} | {g:,.0f} ({g_cpu:,.0f}) | {e:,.0f} ({e_cpu:,.0f}) | {ratio:.1f}x | {listed} |"
    )
    return ratio


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
        trio.run(commits, path, pool[most : 2 * most], 2, GROUP, busy)  # rate: not reported
        print(
            f"| LoadSession(tail=50) while {most:,} sessions commit (group commit) "
            f"| {len(busy):,} | {statistics.median(busy):.3f} | {percentile(busy, 0.95):.3f} |"
        )
        head = (
            "| concurrent sessions | group commit (max_batch=256) | one transaction each "
            "(max_batch=1) | ratio | ratio per run |\n|---|---|---|---|---|"
        )
        print(
            f"\n## Turn throughput, every session's turns back to back (turns/s, each turn a "
            f"BeginTurn and a CommitTurn; CPU µs per turn in brackets; synchronous=FULL; "
            f"median of {reps} alternating runs)\n\n{head}"
        )
        loop_ratio = 0.0
        for n in sizes:
            group, each = alternate(turns, path, pool[:n], max(8, min(200, 4_000 // n)), reps)
            loop_ratio = throughput_row(n, group, each)
        print(
            f"\n## CommitTurn throughput in commit rounds, all sessions in lockstep (commits/s; "
            f"CPU µs per commit in brackets; median of {reps} alternating runs)\n\n{head}"
        )
        floors: list[tuple[float, float, float, float, float, float]] = []

        def measure_floors() -> None:
            # At the largest size, after each repetition: the same conditions.
            floors.append((*sqlite_floors(path, pool[:most]), trio.run(ask_floor, most, 3)))

        for n in sizes:
            after = measure_floors if n == most else None
            rounds = max(4, min(100, 500 // n))
            group, each = alternate(commits, path, pool[:n], rounds, reps, after)
            rounds_ratio = throughput_row(n, group, each)
    txn, rows, rows_cpu, pages_grouped, pages_alone, ask = (
        statistics.median(f[i] for f in floors) for i in range(6)
    )
    grouped, each_one = (1e6 / statistics.median(r for r, _ in mode) for mode in (group, each))
    # Per repetition: that run's one-transaction-each cost over the floors measured after it.
    ceiling = statistics.median(
        1e6 / e / (f[1] + f[5]) for (e, _), f in zip(each, floors, strict=True)
    )
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
    cg, ce = (statistics.median(c for _, c in mode) for mode in (group, each))
    print(f"| CommitTurn with group commit (commit rounds) | {grouped:,.0f} (CPU {cg:,.0f}) |")
    print(f"| CommitTurn, one transaction each (commit rounds) | {each_one:,.0f} (CPU {ce:,.0f}) |")
    load = medians["LoadSession(tail=50)"]
    listing = medians["ListSessions(idle_before), first page of 100"]
    print("\n### Goals\n")
    verdict = _verdict(load <= LOAD_GOAL_MS)
    print(f"- LoadSession(tail=50) median {load:.3f} ms: {verdict} ≤ {LOAD_GOAL_MS} ms")
    verdict = _verdict(listing <= LIST_GOAL_MS)
    print(f"- ListSessions page of 100 median {listing:.3f} ms: {verdict} ≤ {LIST_GOAL_MS} ms")
    print(
        f"- group commit at {most:,} sessions, turns back to back, is {loop_ratio:.1f}x one "
        f"transaction each: {_verdict(loop_ratio >= GROUP_GOAL_RATIO)} ≥ {GROUP_GOAL_RATIO:.0f}x"
    )
    print(
        f"- in commit rounds (lockstep) it is {rounds_ratio:.1f}x; the ceiling there, a store "
        f"costing nothing beyond the rows and the ask: {ceiling:.1f}x"
    )
    print(f"- load average {os.getloadavg()[0]:.1f} at the end")
    return 0


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


if __name__ == "__main__":
    sys.exit(main())
