"""Child process of the disk-full test: a MemoryStore on a file that cannot grow.

Usage: python full_disk_writer.py DB_PATH LIMIT_BYTES

``RLIMIT_FSIZE`` caps every file this process writes at LIMIT_BYTES, with
``SIGXFSZ`` ignored: a write past the cap fails in the kernel (a short write, or
EFBIG), which SQLite reports as SQLITE_FULL or an I/O error, as on a full disk.
The child writes until a write is refused, checks what still works, makes room
again, and prints one JSON line (with what ``ActorSystem.snapshot()`` showed).
"""

from __future__ import annotations

import json
import resource
import signal
import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.memory import MemoryStoreConfig, StorageUnavailable, memory_store_spec
from agcore_actors.memory.messages import Count, Get, GetMemoryStatus, Put


async def main(path: str, limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    unlimited = resource.RLIM_INFINITY
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, unlimited))
    async with ActorSystem() as system:
        memory = await system.root.start_child(
            memory_store_spec("memory", config=MemoryStoreConfig(path=path))
        )
        written, refused = 0, ""
        while written < 100_000:
            try:
                await memory.ask(Put(id=f"item:{written:06d}", content="x" * 2000))
            except StorageUnavailable as exc:
                refused = str(exc)
                break
            written += 1
        again = ""
        try:
            await memory.ask(Put(id="again", content="x" * 2000))
        except StorageUnavailable as exc:
            again = type(exc).__name__
        status = await memory.ask(GetMemoryStatus())
        first = await memory.ask(Get("item:000000"))
        count = await memory.ask(Count())
        info = next(i for i in system.snapshot() if i.name == "memory")
        # Room again (the soft limit may go back up to the hard one): a write
        # goes through and the store is healthy again.
        resource.setrlimit(resource.RLIMIT_FSIZE, (unlimited, unlimited))
        await memory.ask(Put(id="after", content="x"))
        healed = await memory.ask(GetMemoryStatus())
        after = next(i for i in system.snapshot() if i.name == "memory")
        result = {
            "healed": not healed.degraded,
            "snapshot_degraded": info.degraded,
            "snapshot_healed": after.degraded is None,
            "written": written,
            "refused": refused,
            "again": again,
            "degraded": status.degraded,
            "last_error": status.last_error,
            "first_readable": first is not None,
            "count": count,
            "restarts": info.restarts,
        }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]))
