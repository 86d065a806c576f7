"""A SessionHost at scale, against the fast fake OpenAI server in another process.

Three measurements, each with its command:

- ``idle``: memory per live idle session. N sessions (10,000) each run one turn
  (LLM → tool → LLM) and stay live; then all are closed through the host's one way
  out. Per session = (live - closed) / N, in RSS and in tracemalloc's traced heap.
- ``cpu``: client CPU per turn with C sessions (2,000) taking turns at once through the
  host, next to the raw-httpx floor of benchmarks/turns.py in the same run.
- ``soak``: T turns over S sessions with eviction (a small live cap and TTL), RSS sampled
  as it goes: start, middle and end, and the growth from middle to end.

    .venv/bin/python benchmarks/sessions.py                 # all three, full size
    .venv/bin/python benchmarks/sessions.py --quick         # smoke sizes
    .venv/bin/python benchmarks/sessions.py soak --turns 100000 --sessions 50000
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from turns import IN_FLIGHT, add, raw_round, start_server

from agcore_actors import ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    HostConfig,
    SessionHost,
    StoreTurns,
)
from agcore_actors.llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderRegistry,
    provider_actor,
)
from agcore_actors.store import InMemorySessions, SqliteSessions, session_store_spec
from agcore_actors.tools import ToolExecutor, ToolRegistry

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


async def host_for(
    system: ActorSystem, base: str, config: HostConfig, db: str | None = None
) -> SessionHost:
    backend = InMemorySessions() if db is None else SqliteSessions(db, synchronous="NORMAL")
    store = await system.root.start_child(session_store_spec("store", backend=backend))
    registry = ProviderRegistry().register(
        OpenAICompatibleProvider(
            OpenAIConfig(name="fake", base_url=base, api_key="sk-bench", model="fake")
        )
    )
    llm = await system.spawn(provider_actor(registry, max_in_flight=IN_FLIGHT), name="llm")
    tools = ToolRegistry([add])
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(StoreTurns(store))
        .tools(executor, tools)
        .agent(Agent(name="calc", instructions="Be brief."))
        .build()
    )
    return SessionHost(system, bundle, config)


async def turns(host: SessionHost, ids: list[str]) -> None:
    limiter = trio.CapacityLimiter(IN_FLIGHT)

    async def one(session: str) -> None:
        async with limiter:
            result = await host.run(session, "What is 2 + 3?")
            assert result.status == "completed", result

    async with trio.open_nursery() as nursery:
        for session in ids:
            nursery.start_soon(one, session)


async def idle_memory(base: str, n: int) -> dict[str, float]:
    # Sessions are stored in a SQLite file, so the stored transcripts stay out of memory.
    with tempfile.TemporaryDirectory() as tmp:
        return await _idle_memory(base, n, str(Path(tmp) / "sessions.db"))


async def _idle_memory(base: str, n: int, db: str) -> dict[str, float]:
    async with ActorSystem() as system:
        config = HostConfig(max_sessions=n + 10, idle_ttl=1e9, max_turns_in_flight=IN_FLIGHT)
        async with await host_for(system, base, config, db) as host:
            ids = [f"s{i}" for i in range(n)]
            await turns(host, [f"warm{i}" for i in range(200)])  # every code path, pools
            for i in range(200):
                await host.close(f"warm{i}")
            gc.collect()
            before_rss = rss()
            await turns(host, ids)
            gc.collect()
            live_rss, (live_heap, _) = rss(), tracemalloc.get_traced_memory()
            assert len(host.live_sessions) == n
            for session in ids:
                await host.close(session)
            gc.collect()
            closed_heap, _ = tracemalloc.get_traced_memory()
            assert host.live_sessions == []
    return {
        "rss": (live_rss - before_rss) / n,
        "heap": (live_heap - closed_heap) / n,
    }


async def host_cpu(base: str, sessions: int) -> float:
    async with ActorSystem() as system:
        config = HostConfig(max_sessions=sessions + 10, max_turns_in_flight=IN_FLIGHT)
        async with await host_for(system, base, config) as host:
            await turns(host, ["warm"])
            ids = [f"s{i}" for i in range(sessions)]
            start = time.process_time()
            await turns(host, ids)
            return (time.process_time() - start) / sessions


async def soak(base: str, total: int, sessions: int, samples: int) -> list[tuple[int, int]]:
    # Stored in a SQLite file: what stays in memory is the runtime's, not the transcripts.
    with tempfile.TemporaryDirectory() as tmp:
        return await _soak(base, total, sessions, samples, str(Path(tmp) / "soak.db"))


async def _soak(
    base: str, total: int, sessions: int, samples: int, db: str
) -> list[tuple[int, int]]:
    points: list[tuple[int, int]] = []
    async with ActorSystem() as system:
        config = HostConfig(max_sessions=1000, idle_ttl=5.0, max_turns_in_flight=IN_FLIGHT)
        async with await host_for(system, base, config, db) as host:
            done = 0
            step = max(total // samples, 1)
            while done < total:
                ids = [f"s{(done + i) % sessions}" for i in range(min(step, total - done))]
                await turns(host, ids)
                done += len(ids)
                gc.collect()
                points.append((done, rss()))
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SessionHost at scale")
    parser.add_argument("what", nargs="*", default=["idle", "cpu", "soak"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    args = parser.parse_args(argv)
    server, base = start_server()
    try:
        print("## SessionHost (benchmarks/sessions.py)\n")
        if "idle" in args.what:
            n = 200 if args.quick else (args.sessions or 10_000)
            plain = trio.run(idle_memory, base, n)
            tracemalloc.start()
            traced = trio.run(idle_memory, base, n)
            tracemalloc.stop()
            print(f"Memory per live idle session, {n:,} sessions after one tool turn each:\n")
            print("| measure | bytes per session |")
            print("|---|---:|")
            print(f"| RSS growth while they became live (untraced run) | {plain['rss']:,.0f} |")
            print(f"| traced heap freed when they are closed | {traced['heap']:,.0f} |\n")
        if "cpu" in args.what:
            c = 50 if args.quick else (args.sessions or 2_000)
            raw = trio.run(raw_round, base, c, False)
            ours = trio.run(host_cpu, base, c)
            print(f"CPU per turn with {c:,} sessions taking turns at once:\n")
            print("| client | ms per turn |")
            print("|---|---:|")
            print(f"| raw httpx (floor) | {raw * 1000:.2f} |")
            print(f"| SessionHost | {ours * 1000:.2f} ({ours / raw:.2f}x the floor) |\n")
        if "soak" in args.what:
            total = 2_000 if args.quick else (args.turns or 100_000)
            sessions = 1_000 if args.quick else (args.sessions or 50_000)
            started = time.monotonic()
            points = trio.run(soak, base, total, sessions, 20)
            minutes = (time.monotonic() - started) / 60
            start, middle, end = points[0][1], points[len(points) // 2][1], points[-1][1]
            print(f"Soak: {total:,} turns over {sessions:,} sessions ({minutes:.1f} min), ")
            print("live cap 1,000, idle TTL 5 s:\n")
            print("| point | turns | RSS, MB |")
            print("|---|---:|---:|")
            for label, (count, value) in (
                ("start", points[0]),
                ("middle", points[len(points) // 2]),
                ("end", points[-1]),
            ):
                print(f"| {label} | {count:,} | {value / 1e6:.1f} |")
            print(f"\nGrowth from middle to end: {(end - middle) / middle:+.1%}")
            del start
    finally:
        server.kill()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
