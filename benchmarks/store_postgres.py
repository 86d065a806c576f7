"""Session store on PostgreSQL against SQLite: turns/s and client CPU per turn, one run.

Each store runs the same workload through a SessionStore actor: N sessions at once, each
running turns back to back (a ``BeginTurn`` with a user message, then a ``CommitTurn``
with a tool call, its result and the answer, usage and a fact: the workload of
``sessions_store.py``), group commit on (``max_batch=256``). Stores:

- ``sqlite``: a SQLite file, ``synchronous=FULL`` (every commit fsynced), this machine;
- ``postgres``: the PostgreSQL server (``--url``; default ``AGCORE_TEST_POSTGRES_URL`` or
  the local service), a database made for the run and dropped after, unfenced writes;
- ``postgres fenced``: the same, every session first leased and every write carrying its
  fencing token (checked in the write's transaction), as several hosts run.

Client CPU is this process's (``time.process_time``: the event loop, the store's worker
threads, psycopg or sqlite3), per turn; the PostgreSQL server's own CPU is not in it
(it is another process; on a shared server it is the server's budget). The stores
alternate ``--reps`` times; the table shows medians and the median of the per-repetition
ratios (PostgreSQL / SQLite), so drift on a shared machine favours neither.

Run from the repository root::

    python benchmarks/store_postgres.py            # 1 and 100 sessions, 5 repetitions
    python benchmarks/store_postgres.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _sessions_floors import begin_message, commit_message

from agcore_actors import ActorSystem
from agcore_actors.store import (
    PostgresSessions,
    SessionBackendConfig,
    SessionStoreConfig,
    SqliteSessions,
    session_store_spec,
)
from agcore_actors.store import messages as sm

DEFAULT_URL = os.environ.get("AGCORE_TEST_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/test")
KINDS = ("sqlite", "postgres", "postgres fenced")


async def run_turns(
    backend: SessionBackendConfig, sessions: int, per_session: int, fenced: bool
) -> tuple[float, float]:
    """Turns/s and client CPU µs per turn: ``sessions`` sessions at once, each running
    ``per_session`` turns back to back."""
    config = SessionStoreConfig(max_batch=256)
    prefix = f"r{time.time_ns()}"
    ids = [f"{prefix}-s{i}" for i in range(sessions)]
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("sessions", backend=backend, config=config)
        )
        fences: dict[str, int | None] = dict.fromkeys(ids)
        if fenced:
            for sid in ids:
                lease = await store.ask(sm.AcquireLease(session=sid, host="bench", ttl=600.0))
                fences[sid] = lease.token

        async def session(sid: str) -> None:
            version = 0
            for t in range(per_session):
                turn = f"t{t}"
                begin = begin_message(sid, turn, version)
                begin = sm.BeginTurn(
                    session=sid, turn=turn, expected_version=version,
                    messages=begin.messages, fence=fences[sid],
                )  # fmt: skip
                version = (await store.ask(begin)).version
                commit = commit_message(sid, turn, version)
                commit = sm.CommitTurn(
                    session=sid, turn=turn, expected_version=version,
                    messages=commit.messages, usage_delta=commit.usage_delta,
                    facts_set=commit.facts_set, fence=fences[sid],
                )  # fmt: skip
                version = (await store.ask(commit)).version

        started, cpu_started = time.perf_counter(), time.process_time()
        async with trio.open_nursery() as nursery:
            for sid in ids:
                nursery.start_soon(session, sid)
        spent, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    n = sessions * per_session
    return n / spent, cpu / n * 1e6


def make_database(url: str) -> tuple[str, str]:
    """A new database on ``url``'s server for this run: (its URL, its name)."""
    import psycopg

    name = f"agcore_bench_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}")), name


def drop_database(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--url", default=DEFAULT_URL, help="the PostgreSQL server")
    parser.add_argument("--reps", type=int, default=None, help="alternating runs per size")
    parser.add_argument("--turns", type=int, default=None, help="turns per session")
    args = parser.parse_args(argv)
    reps = args.reps or (1 if args.quick else 5)
    sizes = [
        (1, args.turns or (20 if args.quick else 300)),
        (100, args.turns or (3 if args.quick else 20)),
    ]
    url, name = make_database(args.url)
    tmp = Path(tempfile.mkdtemp(prefix="store-pg-bench-"))
    try:
        print("# Session store: PostgreSQL against SQLite (turns back to back, group commit)\n")
        print(f"PostgreSQL server: {urllib.parse.urlsplit(args.url).hostname}, {reps} reps\n")
        print("| sessions | store | turns/s | client CPU µs/turn | turns/s ratio | CPU ratio |")
        print("|---:|---|---:|---:|---:|---:|")
        for sessions, per in sizes:
            got: dict[str, list[tuple[float, float]]] = {k: [] for k in KINDS}
            for rep in range(reps):
                for kind in KINDS:
                    backend: SessionBackendConfig = (
                        SqliteSessions(str(tmp / f"s{sessions}-{rep}.db"))
                        if kind == "sqlite"
                        else PostgresSessions(url)
                    )
                    got[kind].append(
                        trio.run(run_turns, backend, sessions, per, kind == "postgres fenced")
                    )
            base = got["sqlite"]
            for kind in KINDS:
                rate = statistics.median(r for r, _ in got[kind])
                cpu = statistics.median(c for _, c in got[kind])
                ratios = [(r / b[0], c / b[1]) for (r, c), b in zip(got[kind], base, strict=True)]
                rr = statistics.median(x for x, _ in ratios)
                cr = statistics.median(y for _, y in ratios)
                print(f"| {sessions} | {kind} | {rate:,.0f} | {cpu:,.0f} | {rr:.2f} | {cr:.2f} |")
        print("\nratios: the store's figure / SQLite's in the same repetition (median).")
    finally:
        drop_database(args.url, name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
