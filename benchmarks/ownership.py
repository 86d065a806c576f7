"""What owning sessions under leases costs a host: CPU per turn of a clustered host against
the same host without a cluster, in the same run, on the same store.

The scripted model answers at once (no network), so the figures are the runtime's own CPU
(``time.process_time``, every thread of the process: the store's worker thread included)
divided by the turns. Two workloads, 50 callers at once:

- **cold**: every turn is a session's first (``max_sessions`` 100, so most of them also put a
  session away): the activation pays a lease read and grant, the way out a release;
- **warm**: turns of 50 sessions already live: only the token each write carries.

On the in-memory store, and on PostgreSQL when a server answers at ``--postgres`` (default
``AGCORE_TEST_POSTGRES_URL`` or the local service; a schema of its own, dropped after).
Rounds interleave plain and clustered; the median of the rounds is reported with the ratio.

    .venv/bin/python benchmarks/ownership.py            # full run
    .venv/bin/python benchmarks/ownership.py --quick    # smoke (in memory; the test suite)
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.cluster import ClusterConfig, LeaseKeeper
from agcore_actors.llm import ChatRequest, ProviderRegistry, provider_spec
from agcore_actors.store import (
    InMemorySessions,
    PostgresSessions,
    SessionBackendConfig,
    session_store_spec,
)
from agcore_actors.testing import ScriptedProvider, ScriptedReply

CALLERS = 50


def _play(request: ChatRequest, attempt: int) -> ScriptedReply:
    return ScriptedReply(text="ok")


async def _turns(backend: SessionBackendConfig, clustered: bool, cold: bool, turns: int) -> float:
    """CPU seconds per turn."""
    async with ActorSystem() as system:
        registry = ProviderRegistry().register(ScriptedProvider(_play, name="scripted"))
        llm = await system.root.start_child(provider_spec("llm", registry=registry))
        store = await system.root.start_child(session_store_spec("store", backend=backend))
        bundle = (
            AgentBuilder().provider(llm).store(StoreTurns(store)).agent(Agent(name="a")).build()
        )
        keeper = LeaseKeeper(store, ClusterConfig(address="http://bench")) if clustered else None
        limits = HostConfig(max_sessions=100 if cold else 10_000)
        async with SessionHost(system, bundle, limits, cluster=keeper) as host:
            run = secrets.token_hex(3)  # fresh sessions each run (a database may be reused)
            names = [f"{run}-{i}" for i in range(turns if cold else CALLERS)]
            if not cold:
                for name in names:
                    await host.run(name, "hi")
            start = time.process_time()

            async def caller(k: int) -> None:
                for i in range(k, turns, CALLERS):
                    await host.run(names[i % len(names)], "hi")

            async with trio.open_nursery() as nursery:
                for k in range(CALLERS):
                    nursery.start_soon(caller, k)
            return (time.process_time() - start) / turns


@contextmanager
def _postgres(url: str) -> Iterator[PostgresSessions | None]:
    """A schema of its own on the server at ``url`` (None if nothing answers)."""
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            schema = f"bench_{secrets.token_hex(4)}"
            conn.execute(f'CREATE SCHEMA "{schema}"')
    except Exception as exc:
        print(f"(no PostgreSQL at the given URL: {type(exc).__name__}; in memory only)")
        yield None
        return
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.urlencode([("options", f"-csearch_path={schema}")])
    try:
        yield PostgresSessions(urllib.parse.urlunsplit(parts._replace(query=query)))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _row(label: str, backend: Any, cold: bool, turns: int, rounds: int) -> str:
    plain: list[float] = []
    clustered: list[float] = []
    for _ in range(rounds):
        plain.append(trio.run(_turns, backend(), False, cold, turns))
        clustered.append(trio.run(_turns, backend(), True, cold, turns))
    p, c = statistics.median(plain) * 1e6, statistics.median(clustered) * 1e6
    kind = "cold" if cold else "warm"
    return f"| {label} | {kind} | {turns} | {p:.0f} | {c:.0f} | {c / p:.2f}x |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, in memory only")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("AGCORE_TEST_POSTGRES_URL", "postgresql://root@127.0.0.1:5432/test"),
        help="the PostgreSQL server to measure on",
    )
    args = parser.parse_args(argv)
    turns, rounds = (200, 1) if args.quick else (2000, 3)
    print("## Ownership cost (benchmarks/ownership.py)\n")
    print(f"{CALLERS} callers at once; CPU µs per turn, median of {rounds} round(s).\n")
    print("| store | workload | turns | plain | clustered | ratio |")
    print("|---|---|---|---|---|---|")
    for cold in (True, False):
        print(_row("memory", InMemorySessions, cold, turns, rounds))
    if not args.quick:
        with _postgres(args.postgres) as pg:
            if pg is not None:
                for cold in (True, False):
                    print(_row("postgresql", lambda: pg, cold, turns // 4, rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
