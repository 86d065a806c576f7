"""Test helpers for the session store, written from the rules and sharing no code with
``agcore_actors.store``: a transcript checker, message builders, a store in a system."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_actors.store import (
    SessionBackendConfig,
    SessionStoreConfig,
    StoreMsg,
    session_store_spec,
)

NAME = "sessions"


def calls(*ids: str) -> AssistantMessage:
    """An assistant message calling tool ``f`` once per id."""
    return AssistantMessage(tool_calls=[ToolCall(i, FunctionCall("f", "{}")) for i in ids])


def result(call_id: str, text: str = "ok") -> ToolMessage:
    return ToolMessage(text, call_id)


def unanswered(messages: Sequence[Message]) -> list[str]:
    """Ids of the calls of the last non-tool message (if it made calls) still without a
    result after it, in call order."""
    i = len(messages) - 1
    while i >= 0 and isinstance(messages[i], ToolMessage):
        i -= 1
    if i < 0:
        return []
    last = messages[i]
    if not isinstance(last, AssistantMessage) or not last.tool_calls:
        return []
    answered = {m.tool_call_id for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
    return [c.id for c in last.tool_calls if c.id not in answered]


def problems(messages: Sequence[Message], *, open_end: bool = False) -> list[str]:
    """Why ``messages`` is not a valid transcript: every tool call is answered exactly
    once, by a tool message after its call and before the next non-tool message; call
    ids are unique in the transcript. ``open_end``: the last calls may be unanswered."""
    found: list[str] = []
    waiting: list[str] = []  # calls of the current assistant message not yet answered
    done: set[str] = set()  # calls answered so far in the whole transcript
    every: set[str] = set()
    for n, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if m.tool_call_id in waiting:
                waiting.remove(m.tool_call_id)
                done.add(m.tool_call_id)
            elif m.tool_call_id in done:
                found.append(f"{n}: {m.tool_call_id} answered twice")
            else:
                found.append(f"{n}: {m.tool_call_id} answers no open call")
            continue
        if waiting:
            found.append(f"{n}: {waiting} unanswered before a {type(m).__name__}")
        waiting = []
        if isinstance(m, AssistantMessage) and m.tool_calls:
            for c in m.tool_calls:
                if c.id in every:
                    found.append(f"{n}: call id {c.id} used twice")
                every.add(c.id)
            waiting = [c.id for c in m.tool_calls]
    if waiting and not open_end:
        found.append(f"end: {waiting} unanswered")
    return found


def user(text: str = "hi") -> UserMessage:
    return UserMessage(text)


@asynccontextmanager
async def running_store(
    backend: SessionBackendConfig, config: SessionStoreConfig | None = None
) -> AsyncIterator[ActorRef[StoreMsg]]:
    """A strict system with a store on ``backend`` on trio's clock."""
    async with ActorSystem(strict=True, seed=0) as system:
        spec = session_store_spec(NAME, backend=backend, config=config, clock=trio.current_time)
        yield await system.root.start_child(spec)
