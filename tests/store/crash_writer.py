"""Child process of the crash test: runs turns in 8 sessions at once, for ever.

Usage: python crash_writer.py DB_PATH SEED [CHECKPOINT_PAGES]
       python crash_writer.py postgresql://... SEED

(A small ``CHECKPOINT_PAGES`` checkpoints every few commits, for kills during
checkpoints.)

At start every session is loaded; an open turn (left by the previous, killed, process)
is closed with ``RepairInterrupted``. Then each session loops over turns: ``BeginTurn``
(a user message), ``AppendTurn`` (an assistant message with 0-2 calls and the first
result) when the turn calls tools, ``CommitTurn`` (the other results and the answer).

Before each write it prints ``try <session> <kind> <messages as JSON>``; after the store
acknowledged it, ``ack <session> <version>``. Each line is flushed at once.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import msgspec
import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_actors.store import (
    PostgresSessions,
    SessionBackendConfig,
    SessionNotFound,
    SqliteSessions,
    StoreMsg,
    session_store_spec,
)
from agcore_actors.store import messages as sm

SESSIONS = [f"s{i}" for i in range(8)]
_json = msgspec.json.Encoder()


def say(*parts: str) -> None:
    print(*parts, flush=True)


async def write(
    store: ActorRef[StoreMsg], sid: str, kind: str, msg: Any, messages: list[Message]
) -> int:
    say("try", sid, kind, _json.encode(messages).decode())
    record = await store.ask(msg)
    say("ack", sid, str(record.version))
    return int(record.version)


async def session(store: ActorRef[StoreMsg], sid: str, rng: random.Random) -> None:
    try:
        loaded = await store.ask(sm.LoadSession(sid, tail=0))
        version, turns = loaded.record.version, loaded.record.turns
        if loaded.record.open_turn is not None:
            repair = sm.RepairInterrupted(sid, loaded.record.open_turn, version)
            version = await write(store, sid, "repair", repair, [])
    except SessionNotFound:
        version, turns = 0, 0
    while True:
        turn = f"{sid}-t{turns}"
        turns += 1
        first: list[Message] = [UserMessage(f"{turn} question")]
        version = await write(
            store,
            sid,
            "begin",
            sm.BeginTurn(session=sid, turn=turn, expected_version=version, messages=first),
            first,
        )
        ids = [f"{turn}-c{j}" for j in range(rng.randint(0, 2))]
        rest: list[Message] = [ToolMessage(f"result {i}", i) for i in ids[1:]]
        if ids:
            middle: list[Message] = [
                AssistantMessage(tool_calls=[ToolCall(i, FunctionCall("f", "{}")) for i in ids]),
                ToolMessage(f"result {ids[0]}", ids[0]),
            ]
            msg: Any = sm.AppendTurn(
                session=sid,
                turn=turn,
                expected_version=version,
                messages=middle,
                usage_delta=Usage(1, 1),
            )
            version = await write(store, sid, "append", msg, middle)
        rest.append(AssistantMessage(f"{turn} answer " + "x" * rng.randint(0, 300)))
        msg = sm.CommitTurn(
            session=sid,
            turn=turn,
            expected_version=version,
            messages=rest,
            usage_delta=Usage(2, 3),
            facts_set={"last": turn},
        )
        version = await write(store, sid, "commit", msg, rest)


async def main(path: str, seed: int, pages: int | None) -> None:
    backend: SessionBackendConfig
    if path.startswith("postgresql://"):
        backend = PostgresSessions(path)
    elif pages is None:
        backend = SqliteSessions(path)
    else:
        backend = SqliteSessions(path, checkpoint_pages=pages)
    async with ActorSystem() as system:
        spec = session_store_spec("sessions", backend=backend)
        store = await system.root.start_child(spec)
        say("ready")
        async with trio.open_nursery() as nursery:
            for i, sid in enumerate(SESSIONS):
                nursery.start_soon(session, store, sid, random.Random(seed * 100 + i))


if __name__ == "__main__":
    pages = int(sys.argv[3]) if sys.argv[3:] else None
    trio.run(main, sys.argv[1], int(sys.argv[2]), pages)
