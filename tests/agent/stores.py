"""The real session store for the agent tests: the SessionStore actor on its in-memory
backend (on trio's clock), the Session's adapter to it, and reads for assertions."""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import StoreTurns
from agcore_actors.llm import Message
from agcore_actors.store import InMemorySessions, SessionNotFound, session_store_spec
from agcore_actors.store import messages as sm


async def start_store(system: ActorSystem, name: str = "store") -> tuple[ActorRef[Any], StoreTurns]:
    """A SessionStore on the in-memory backend and a TurnStore over it."""
    spec = session_store_spec(name, backend=InMemorySessions(), clock=trio.current_time)
    ref = await system.root.start_child(spec)
    return ref, StoreTurns(ref)


async def stored(store: ActorRef[Any], session: str) -> sm.SessionSnapshot | None:
    """The whole stored session (record, facts, raw log), or None if there is none."""
    try:
        snapshot: sm.SessionSnapshot = await store.ask(sm.ExportSession(session))
    except SessionNotFound:
        return None
    return snapshot


async def transcript(store: ActorRef[Any], session: str) -> list[Message]:
    """The session's raw log, every message in order."""
    snapshot = await stored(store, session)
    return [entry.message for entry in snapshot.entries] if snapshot else []
