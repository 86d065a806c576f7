"""A bot process for the signal tests: asyncio.run, an AsyncioHost, a turn in flight.

Prints ``ready`` once the turn runs, then waits; on SIGINT or SIGTERM the host drains
(the turn is cancelled and committed: its status is printed), then ``host stopped``.
"""

from __future__ import annotations

import asyncio

from agcore_actors.agent import HostConfig
from agcore_actors.asyncio import AsyncioHost
from tests.asyncio.rig import Model, builder


async def main() -> None:
    try:
        async with AsyncioHost(builder(Model()), HostConfig(drain_timeout=0.0)) as host:
            turn = asyncio.create_task(host.run("s", "tools 3"))
            turn.add_done_callback(lambda t: print(f"turn {t.result().status}", flush=True))
            await asyncio.sleep(0.01)
            print("ready", flush=True)
            await asyncio.Event().wait()
    finally:
        print("host stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
