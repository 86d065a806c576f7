"""How stopping and spawning actors scale with the number of children of a supervisor.

Spawns n idle actors under the root supervisor, then times ``system.stop`` of 200 of them
spread over the tree and 200 more ``spawn`` calls. A supervisor that scanned its children on
every event would show the per-operation cost growing with n.

Usage: ``.venv/bin/python benchmarks/supervisor_scaling.py [--sizes 500 4000]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import trio

from agcore_actors import Actor, ActorSystem, Request


class Ping(Request[int], frozen=True):
    n: int


class Echo(Actor[Ping]):
    async def handle(self, msg: Ping) -> int:
        return msg.n


async def measure(n: int, operations: int = 200) -> tuple[float, float]:
    """Microseconds per stop and per spawn with ``n`` children."""
    async with ActorSystem() as system:
        for i in range(n):
            await system.spawn(Echo, name=f"a{i}")
        victims = range(0, n, max(1, n // operations))
        start = time.perf_counter()
        for i in victims:
            await system.stop(f"a{i}")
        per_stop = (time.perf_counter() - start) / len(victims)
        start = time.perf_counter()
        for i in range(n, n + operations):
            await system.spawn(Echo, name=f"a{i}")
        per_spawn = (time.perf_counter() - start) / operations
    return per_stop * 1e6, per_spawn * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 4000])
    args = parser.parse_args(argv)
    print("| children | µs per stop | µs per spawn |")
    print("| ---: | ---: | ---: |")
    for n in args.sizes:
        stop, spawn = trio.run(measure, n)
        print(f"| {n:,} | {stop:,.0f} | {spawn:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
