"""Child process of the crash test: writes through a MemoryStore actor forever.

Usage: python crash_writer.py DB_PATH

Each write is a Put (even numbers) or a conversation Append (odd numbers).
A line ``ack <n>`` is printed (and flushed) only after the ask returned, i.e.
after the store acknowledged the write.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.memory import (
    ConversationMemoryConfig,
    MemoryStoreConfig,
    MemoryStrategy,
    StoredMessage,
    memory_store_spec,
)
from agcore_actors.memory.messages import Append, Put


async def main(path: str) -> None:
    # synchronous=FULL (the default); keep the whole transcript.
    config = MemoryStoreConfig(
        path=path, conversation=ConversationMemoryConfig(strategy=MemoryStrategy.FULL)
    )
    async with ActorSystem() as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        n = 0
        while True:
            if n % 2 == 0:
                await mem.ask(Put(id=f"item:{n:06d}", content="x" * 200, metadata={"n": n}))
            else:
                await mem.ask(Append("crash", [StoredMessage(role="user", content=f"msg {n}")]))
            print(f"ack {n}", flush=True)
            n += 1


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
