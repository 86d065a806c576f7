"""One measured run of benchmarks/peers.py, in its own process (and its own venv).

``python _peers_run.py FRAMEWORK --base URL --sessions C --mode plain|streamed``
prints one JSON line: turns, client CPU seconds (``time.process_time`` of this process
only; the fake server is another process), wall seconds and peak RSS
(``ru_maxrss``). With ``--idle N`` it instead keeps N sessions, each after one
completed turn, and reports the RSS they added per session (with ``--evict``, after
the framework deactivated them: agcore's SessionHost closes them to its store, as its
idle TTL does).

The workload is the same for every framework: a session is 3 turns, each turn
"What is 2 + 3?" → the model calls the tool ``add`` → the tool runs → the model
answers, with the whole history sent again on the next turn. C sessions run at once;
runs of fewer than 100 sessions repeat in batches until 100 sessions (300 turns) have
run. One warm-up session runs before the clock starts. Every turn's answer and every
tool call are checked, so a framework cannot be fast by doing less.

This module imports nothing from agcore_actors at the top: the peers' venvs run it too.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_frameworks import ADAPTERS, EXPECTED, QUESTION, TURNS, Adapter, tool_calls

#: Sessions a CPU run covers at least (in batches of C).
MIN_SESSIONS = 100
#: Sessions started at once while the idle ones are being made.
IDLE_BATCH = 100
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def _session(adapter: Adapter, index: int, streamed: bool, turns: int) -> Any:
    state = await adapter.new_session(index)
    for _ in range(turns):
        state, text = await adapter.turn(state, QUESTION, streamed)
        if text.strip() != EXPECTED:
            raise AssertionError(f"{adapter.name}: unexpected answer {text!r}")
    return state


async def _gather(adapter: Adapter, calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """Run ``calls`` at once on the adapter's event loop; their results in order."""
    results: list[Any] = [None] * len(calls)
    if adapter.loop == "trio":
        import trio

        async def keep(i: int) -> None:
            results[i] = await calls[i]()

        async with trio.open_nursery() as nursery:
            for i in range(len(calls)):
                nursery.start_soon(keep, i)
        return results
    import asyncio

    return list(await asyncio.gather(*(call() for call in calls)))


def _batch(adapter: Adapter, first: int, count: int, streamed: bool, turns: int) -> list[Any]:
    def one(i: int) -> Callable[[], Awaitable[Any]]:
        return lambda: _session(adapter, i, streamed, turns)

    return [one(first + i) for i in range(count)]


async def cpu_run(
    adapter: Adapter, sessions: int, streamed: bool, least: int = MIN_SESSIONS
) -> dict[str, Any]:
    await adapter.setup(max_sessions=max(sessions, least) + 10)
    try:
        await _session(adapter, -1, streamed, TURNS)  # warm-up: imports, pools, caches
        batches = max(1, -(-least // sessions))
        calls_before = tool_calls()
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        for b in range(batches):
            await _gather(adapter, _batch(adapter, b * sessions, sessions, streamed, TURNS))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        turns = batches * sessions * TURNS
        if tool_calls() - calls_before != turns:
            raise AssertionError(f"{adapter.name}: {tool_calls() - calls_before} tool calls")
    finally:
        await adapter.close()
    return {"turns": turns, "cpu": cpu, "wall": wall, "peak_rss": peak_rss()}


async def idle_run(adapter: Adapter, n: int, streamed: bool, evict: bool) -> dict[str, Any]:
    await adapter.setup(max_sessions=n + IDLE_BATCH + 10)
    try:
        warm = IDLE_BATCH
        await _gather(adapter, _batch(adapter, -warm - 1, warm, streamed, 1))  # every path
        await adapter.forget(range(-warm - 1, -1))
        gc.collect()
        before = rss()
        kept: list[Any] = []
        for first in range(0, n, IDLE_BATCH):
            count = min(IDLE_BATCH, n - first)
            kept += await _gather(adapter, _batch(adapter, first, count, streamed, 1))
            if evict:  # what the host does to an idle session after its TTL
                await adapter.forget(range(first, first + count))
        await adapter.settle()
        gc.collect()
        after = rss()
        live = 0 if evict else n
        if adapter.live() not in (None, live):
            raise AssertionError(f"{adapter.name}: {adapter.live()} live sessions, not {live}")
        del kept
    finally:
        await adapter.close()
    return {"sessions": n, "idle_per_session": (after - before) / n, "peak_rss": peak_rss()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one run of benchmarks/peers.py")
    parser.add_argument("framework", choices=sorted(ADAPTERS))
    parser.add_argument("--base", required=True, help="the fake server's /v1 URL")
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--mode", choices=["plain", "streamed"], default="plain")
    parser.add_argument("--idle", type=int, default=0, help="measure N idle sessions")
    parser.add_argument("--evict", action="store_true", help="idle sessions deactivated")
    parser.add_argument("--min-sessions", type=int, default=MIN_SESSIONS, help="per CPU run")
    args = parser.parse_args(argv)
    adapter = ADAPTERS[args.framework](args.base)
    streamed = args.mode == "streamed"
    job: Callable[[], Awaitable[dict[str, Any]]]
    if args.idle:
        job = lambda: idle_run(adapter, args.idle, streamed, args.evict)  # noqa: E731
    else:
        job = lambda: cpu_run(adapter, args.sessions, streamed, args.min_sessions)  # noqa: E731
    if adapter.loop == "trio":
        import trio

        result = trio.run(job)
    else:
        import asyncio

        result = asyncio.run(job())
    result = {"framework": args.framework, "sessions": args.sessions, "mode": args.mode, **result}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
