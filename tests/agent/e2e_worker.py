"""One process, one turn, against the real local model and the real mcp-server-time.

``python -m tests.agent.e2e_worker DB BASE_URL API_KEY MODEL TIME_SERVER PROMPT`` runs one
turn of session ``e2e`` (stored in the SQLite file DB) with a function tool ``add`` and the
MCP server's tools, and prints one JSON object: the result, the tool calls the turn made
and the length of the history the model saw.
"""

from __future__ import annotations

import json
import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, ModelSettings, StoreTurns, session_spec
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderRegistry,
    provider_actor,
)
from agcore_actors.mcp import StdioServer, server_spec, wait_ready
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


async def main(
    db: str, base_url: str, api_key: str, model: str, time_server: str, prompt: str
) -> None:
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(db))
        )
        # The local server sometimes drops a connection reused after a stream (docs/local-model.md).
        config = OpenAIConfig(
            name="local", base_url=base_url, api_key=api_key, model=model,
            headers={"Connection": "close"},
        )  # fmt: skip
        llm = await system.spawn(
            provider_actor(ProviderRegistry().register(OpenAICompatibleProvider(config))),
            name="llm",
        )
        tools = ToolRegistry([add])
        server = StdioServer(time_server, ["--local-timezone", "UTC"])
        await system.start_supervisor(server_spec("time", server=server, registry=tools))
        await wait_ready(system.lookup("mcp:time"), timeout=30)
        executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
        agent = Agent(
            name="assistant",
            instructions="You are a helpful assistant. Use a tool when it helps.",
            model=ModelSettings(temperature=0.0, max_tokens=200),
        )
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store))
            .tools(executor, tools)
            .agent(agent)
        ).build()
        session = await system.root.start_child(session_spec("e2e", bundle))
        calls: list[dict[str, str]] = []
        result = None
        async with session.stream(am.SubmitTurn(text=prompt)) as events:
            async for event in events:
                if isinstance(event, am.ToolCallFinished):
                    calls.append(
                        {"name": event.name, "status": event.status, "content": event.content}
                    )
                if isinstance(event, am.TurnCompleted | am.TurnCancelled | am.TurnFailed):
                    result = event.result
        info = await session.ask(am.GetSessionInfo())
        assert result is not None
        print(json.dumps({
            "status": result.status, "text": result.text, "error": result.error,
            "tool_calls": calls, "turns": info.turns, "messages": info.messages,
        }))  # fmt: skip


if __name__ == "__main__":
    db, base_url, api_key, model, time_server, prompt = sys.argv[1:7]
    trio.run(main, db, base_url, api_key, model, time_server, prompt)
