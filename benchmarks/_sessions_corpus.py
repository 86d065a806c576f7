"""The session store benchmark's corpus: sessions of 5 turns (user → assistant call → tool
result → answer), idle times spread over 30 days, generated deterministically and cached
as a SQLite file (built on first use; every run works on a fresh copy)."""

from __future__ import annotations

import functools
import random
import shutil
import time
from pathlib import Path

from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_actors.store import SessionRecord
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import SqliteSessionBackend

#: 2: built with the store's default page size (2,048 bytes; version 1 had SQLite's 4,096);
#: 3: schema version 3 (messages in a rowid table; opening a version 2 copy would migrate it).
CORPUS_VERSION = 3
SEED = 20260613
DAY = 86_400.0
EPOCH = 1_780_000_000.0


def turn_messages(rng: random.Random, sid: str, turn: int) -> list[Message]:
    call = f"{sid}-{turn}"
    words = " ".join(rng.choice(["time", "city", "plan", "note", "rain"]) for _ in range(12))
    return [
        UserMessage(f"question {turn}: {words}"),
        AssistantMessage(tool_calls=[ToolCall(call, FunctionCall("lookup", '{"q": "x"}'))]),
        ToolMessage(f"result: {words} {words}", call),
        AssistantMessage(f"answer {turn}: {words}"),
    ]


def snapshot(rng: random.Random, n: int, per_session: int) -> sm.SessionSnapshot:
    sid = f"chat-{n:07d}"
    updated = EPOCH - rng.uniform(0, 30 * DAY)
    messages = [m for t in range(per_session // 4) for m in turn_messages(rng, sid, t)]
    entries = [
        sm.LogEntry(index=i, turn=f"t{i // 4}", created_at=updated, message=m)
        for i, m in enumerate(messages)
    ]
    record = SessionRecord(
        id=sid,
        agent="assistant",
        turns=per_session // 4,
        last_index=len(entries) - 1,
        usage=Usage(1000, 200, 50, 10, 5),
        created_at=updated - DAY,
        updated_at=updated,
        version=1,
    )
    return sm.SessionSnapshot(record=record, facts={"name": "user"}, entries=entries)


def corpus(cache_dir: Path, sessions: int, per_session: int) -> Path:
    """The cached corpus file (built on first use)."""
    path = cache_dir / f"sessions-v{CORPUS_VERSION}-{sessions}x{per_session}.db"
    if path.exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = path.with_suffix(".building")
    for leftover in cache_dir.glob(building.name + "*"):
        leftover.unlink()
    started = time.perf_counter()
    rng = random.Random(SEED)
    backend = SqliteSessionBackend(building, synchronous="NORMAL")
    try:
        for first in range(0, sessions, 1000):
            restores = [
                functools.partial(
                    ops.restore, backend, sm.RestoreSession(snapshot(rng, n, per_session)), 0.0
                )
                for n in range(first, min(first + 1000, sessions))
            ]
            for result in backend.run_batch(restores, True):
                result.unwrap()
        backend.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        backend.close()
    building.rename(path)
    print(f"(built the corpus in {time.perf_counter() - started:.0f} s: {path})")
    return path


def working_copy(path: Path, into: Path) -> Path:
    copy = into / "work.db"
    shutil.copyfile(path, copy)
    return copy
