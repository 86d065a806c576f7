"""Child process of the crash test: writes through a MemoryStore actor forever.

Usage: python crash_writer.py DB_PATH

Each write is a Put (even numbers) or a knowledge PutPage (odd numbers).
A line ``ack <n>`` is printed (and flushed) only after the ask returned, i.e.
after the store acknowledged the write.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.memory import KnowledgePage, MemoryStoreConfig, memory_store_spec
from agcore_actors.memory.messages import Put, PutPage


async def main(path: str) -> None:
    config = MemoryStoreConfig(path=path)  # synchronous=FULL (the default)
    async with ActorSystem() as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        n = 0
        while True:
            if n % 2 == 0:
                await mem.ask(Put(id=f"item:{n:06d}", content="x" * 200, metadata={"n": n}))
            else:
                page = KnowledgePage(id=f"knowledge_{n:06d}", title=f"page {n}", content="y" * 200)
                await mem.ask(PutPage(page))
            print(f"ack {n}", flush=True)
            n += 1


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
