"""Session store benchmark: loads, lists and turn commits at 100,000 sessions x 20 messages.

One run measures, through a SessionStore actor on a SQLite file (WAL,
``synchronous=FULL``: every reply is fsynced), in a plain ``ActorSystem``:

- ``LoadSession(tail=50)``: record, last messages and facts of a random session;
- ``ListSessions(idle_before=...)``: a page of 100 idle sessions at a random cutoff,
  the first page and a page reached through a cursor;
- ``CommitTurn`` throughput with 1 session and with 1,000 concurrent sessions, each
  with group commit (``max_batch=256``) and with one transaction per request
  (``max_batch=1``), in the same run. Each round begins a turn in every session
  (untimed), then commits them all at once (timed): three messages, usage and a fact.

The corpus (each session: 5 turns of user → assistant call → tool result → answer,
idle times spread over 30 days) is generated deterministically and cached under the
system temp directory; every run works on a fresh copy of it.

Run from the repository root::

    python benchmarks/sessions_store.py            # full run (first run builds the corpus)
    python benchmarks/sessions_store.py --quick    # smoke test: 2,000 sessions
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem, Request
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_actors.store import (
    SessionRecord,
    SessionStoreConfig,
    SqliteSessions,
    StoreMsg,
    session_store_spec,
)
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import SqliteSessionBackend

CORPUS_VERSION = 1
SEED = 20260613
DAY = 86_400.0
EPOCH = 1_780_000_000.0
LOAD_GOAL_MS, LIST_GOAL_MS, GROUP_GOAL_RATIO = 1.0, 5.0, 5.0


def turn_messages(rng: random.Random, sid: str, turn: int) -> list[Message]:
    call = f"{sid}-{turn}"
    words = " ".join(rng.choice(["time", "city", "plan", "note", "rain"]) for _ in range(12))
    return [
        UserMessage(f"question {turn}: {words}"),
        AssistantMessage(tool_calls=[ToolCall(call, FunctionCall("lookup", '{"q": "x"}'))]),
        ToolMessage(f"result: {words} {words}", call),
        AssistantMessage(f"answer {turn}: {words}"),
    ]


def snapshot(rng: random.Random, n: int, per_session: int) -> sm.SessionSnapshot:
    sid = f"chat-{n:07d}"
    updated = EPOCH - rng.uniform(0, 30 * DAY)
    messages = [m for t in range(per_session // 4) for m in turn_messages(rng, sid, t)]
    entries = [
        sm.LogEntry(index=i, turn=f"t{i // 4}", created_at=updated, message=m)
        for i, m in enumerate(messages)
    ]
    record = SessionRecord(
        id=sid,
        agent="assistant",
        turns=per_session // 4,
        last_index=len(entries) - 1,
        usage=Usage(1000, 200, 50, 10, 5),
        created_at=updated - DAY,
        updated_at=updated,
        version=1,
    )
    return sm.SessionSnapshot(record=record, facts={"name": "user"}, entries=entries)


def corpus(cache_dir: Path, sessions: int, per_session: int) -> Path:
    """The cached corpus file (built on first use)."""
    path = cache_dir / f"sessions-v{CORPUS_VERSION}-{sessions}x{per_session}.db"
    if path.exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = path.with_suffix(".building")
    for leftover in cache_dir.glob(building.name + "*"):
        leftover.unlink()
    started = time.perf_counter()
    rng = random.Random(SEED)
    backend = SqliteSessionBackend(building, synchronous="NORMAL")
    try:
        for first in range(0, sessions, 1000):
            restores = [
                functools.partial(
                    ops.restore, backend, sm.RestoreSession(snapshot(rng, n, per_session)), 0.0
                )
                for n in range(first, min(first + 1000, sessions))
            ]
            for result in backend.run_batch(restores, True):
                result.unwrap()
        backend.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        backend.close()
    building.rename(path)
    print(f"(built the corpus in {time.perf_counter() - started:.0f} s: {path})")
    return path


def working_copy(path: Path, into: Path) -> Path:
    copy = into / "work.db"
    shutil.copyfile(path, copy)
    return copy


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
) -> float:
    """CommitTurn/s: each round begins a turn everywhere (untimed), then commits all.

    With ``loads``, one reader loads other sessions (``tail=50``) back to back while the
    commits run, and records how long each load took (ms).
    """
    versions = {}
    spent = 0.0
    config = SessionStoreConfig(max_batch=max_batch)
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("sessions", backend=SqliteSessions(str(path)), config=config)
        )
        for sid in ids:
            versions[sid] = (await store.ask(sm.LoadSession(sid, tail=0))).record.version

        async def begin(sid: str, turn: str) -> None:
            msg = sm.BeginTurn(
                session=sid, turn=turn, expected_version=versions[sid], messages=[UserMessage("q")]
            )
            versions[sid] = (await store.ask(msg)).version

        async def commit(sid: str, turn: str) -> None:
            call = f"{sid}-{turn}"
            msg = sm.CommitTurn(
                session=sid,
                turn=turn,
                expected_version=versions[sid],
                messages=[
                    AssistantMessage(tool_calls=[ToolCall(call, FunctionCall("lookup", "{}"))]),
                    ToolMessage("result " * 20, call),
                    AssistantMessage("answer " * 20),
                ],
                usage_delta=Usage(900, 120, 300, 0, 40),
                facts_set={"last": turn},
            )
            versions[sid] = (await store.ask(msg)).version

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
            turn = f"bench-{max_batch}-{r}"
            async with trio.open_nursery() as nursery:
                for sid in ids:
                    nursery.start_soon(begin, sid, turn)
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                reading = trio.CancelScope()
                nursery.start_soon(commit_all, turn, reading)
                if loads is not None:
                    with reading:
                        await reader(loads)
            spent += time.perf_counter() - started
    return len(ids) * rounds / spent


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
    args = parser.parse_args(argv)
    sessions = args.sessions or (2_000 if args.quick else 100_000)
    per_session = 20
    n_reads, concurrent = (200, 100) if args.quick else (2_000, 1_000)
    rounds_one, rounds_many = (30, 2) if args.quick else (300, 5)

    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"trio {trio.__version__}, {os.cpu_count()} cpus, {platform.machine()}, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    source = corpus(args.cache_dir, sessions, per_session)
    with tempfile.TemporaryDirectory(prefix="sessions-bench-") as tmp:
        path = working_copy(source, Path(tmp))
        size = f"{sessions:,} sessions x {per_session} messages"
        print(f"\n## Session store at {size} (ms per request)\n")
        print("| request | requests | median ms | p95 ms |")
        print("|---|---|---|---|")
        medians: dict[str, float] = {}
        for name, ms in trio.run(reads, path, sessions, n_reads):
            medians[name] = statistics.median(ms)
            print(f"| {name} | {len(ms):,} | {medians[name]:.3f} | {percentile(ms, 0.95):.3f} |")
        rng = random.Random(SEED + 2)
        pool = [f"chat-{i:07d}" for i in rng.sample(range(sessions), 2 * concurrent + 2)]
        rows = []
        busy: list[float] = []
        for label, batch in [("group commit (max_batch=256)", 256), ("one transaction each", 1)]:
            chosen = pool[:concurrent] if batch == 256 else pool[concurrent : 2 * concurrent]
            single = pool[-1] if batch == 256 else pool[-2]
            one = trio.run(commits, path, [single], rounds_one, batch)
            many = trio.run(commits, path, chosen, rounds_many, batch, busy if batch > 1 else None)
            rows.append((label, one, many))
        print(
            f"| LoadSession(tail=50) while {concurrent:,} sessions commit (group commit) "
            f"| {len(busy):,} | {statistics.median(busy):.3f} | {percentile(busy, 0.95):.3f} |"
        )
        print("\n## CommitTurn throughput (commits/s, synchronous=FULL)\n")
        print(f"| mode | 1 session | {concurrent:,} concurrent sessions |")
        print("|---|---|---|")
        for label, one, many in rows:
            print(f"| {label} | {one:,.0f} | {many:,.0f} |")
    ratio = rows[0][2] / rows[1][2]
    load = medians["LoadSession(tail=50)"]
    listing = medians["ListSessions(idle_before), first page of 100"]
    print("\n### Goals\n")
    verdict = _verdict(load <= LOAD_GOAL_MS)
    print(f"- LoadSession(tail=50) median {load:.3f} ms: {verdict} ≤ {LOAD_GOAL_MS} ms")
    verdict = _verdict(listing <= LIST_GOAL_MS)
    print(f"- ListSessions page of 100 median {listing:.3f} ms: {verdict} ≤ {LIST_GOAL_MS} ms")
    print(
        f"- group commit at {concurrent:,} sessions is {ratio:.1f}x one transaction each: "
        f"{_verdict(ratio >= GROUP_GOAL_RATIO)} ≥ {GROUP_GOAL_RATIO:.0f}x"
    )
    return 0


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


if __name__ == "__main__":
    sys.exit(main())
