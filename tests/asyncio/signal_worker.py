"""A bot process for the signal tests: asyncio.run, an AsyncioHost, a turn in flight.

Prints ``ready`` once the turn's tool runs (it would run for an hour), then waits; on
SIGINT or SIGTERM the host drains (the turn is cancelled and committed: its last event's
status is printed by the task reading it), then ``host stopped``.
"""

from __future__ import annotations

import asyncio

from agcore_actors.agent import HostConfig
from agcore_actors.agent import messages as am
from agcore_actors.asyncio import AsyncioHost
from tests.asyncio.rig import Model, builder


async def read_turn(host: AsyncioHost, started: asyncio.Event) -> None:
    last = None
    async for event in host.submit("s", "hang"):
        if isinstance(event, am.ToolCallStarted):
            started.set()
        last = event
    assert isinstance(last, am.TurnCancelled | am.TurnCompleted | am.TurnFailed)
    print(f"turn {last.result.status}", flush=True)


async def main() -> None:
    try:
        async with AsyncioHost(builder(Model()), HostConfig(drain_timeout=0.0)) as host:
            started = asyncio.Event()
            # A task of its own: the signal cancels the main task, not the reader, which
            # reads on until the turn's last event.
            reader = asyncio.create_task(read_turn(host, started))
            await started.wait()
            print("ready", flush=True)
            await asyncio.Event().wait()
    finally:
        assert reader.done()
        print("host stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
