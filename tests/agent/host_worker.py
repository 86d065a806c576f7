"""A bot process for the SIGKILL test: a SessionHost on a SQLite session store.

``python -m tests.agent.host_worker DB TURNS SESSIONS``: runs TURNS turns round-robin over
SESSIONS sessions (each turn: model → tool → model, with a little virtual-free real delay
so a kill can land mid-turn) and prints ``ACK <session> <n>`` once a turn's result is back
(so it is committed). Turn n of a session says ``turn <n>``.
"""

from __future__ import annotations

import sys
import uuid

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    provider_actor,
)
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool


@function_tool
async def note(text: str) -> str:
    """Take a note."""
    await trio.sleep(0.002)
    return f"noted {text}"


def play(request: ChatRequest, attempt: int) -> ScriptedReply:
    if isinstance(request.messages[-1], ToolMessage):
        return ScriptedReply(text="done", latency=0.002)
    # A real provider's call ids are unique; the script's default ids restart with the process.
    call = ScriptedToolCall("note", '{"text": "x"}', id=f"call_{uuid.uuid4().hex}")
    return ScriptedReply(tool_calls=[call], latency=0.002)


async def main(db: str, turns: int, sessions: int) -> None:
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(db))
        )
        registry = ProviderRegistry().register(ScriptedProvider(play))
        llm = await system.spawn(
            provider_actor(registry, retry=RetryConfig(max_retries=0)), name="llm"
        )
        tools = ToolRegistry([note])
        executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store))
            .tools(executor, tools)
            .agent(Agent(name="bot"))
            .build()
        )
        async with SessionHost(system, bundle, HostConfig(max_sessions=2)) as host:
            for n in range(turns):
                session = f"chat-{n % sessions}"
                result = await host.run(session, f"turn {n}")
                assert result.status == "completed", result
                print(f"ACK {session} {n}", flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
