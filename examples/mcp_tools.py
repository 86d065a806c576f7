"""MCP tools: the tools of MCP servers, called by the model like any other tool.

    python examples/mcp_tools.py claude_desktop_config.json "What time is it in Tokyo?"

The servers are configured in the ``mcpServers`` shape Claude Desktop uses; without a
file, the example runs ``mcp-server-time`` (``pip install mcp-server-time``) over stdio.
Each server gets a supervised ``McpConnection`` actor that connects, lists the server's
tools into the ``ToolRegistry`` as ``{server}-{tool}``, and reconnects with backoff if
the server dies (a circuit breaker parks one that keeps failing). The agent then sees
them next to its Python tools, and the ToolExecutor calls them through the connection
under the same per-call timeouts.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.mcp import load_config, parse_config, servers_spec, wait_ready
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.tools import ToolRegistry, tool_executor_spec

from _model import llm_spec

DEFAULT_SERVERS = {
    "mcpServers": {"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}}
}


async def main(config: str, question: str) -> None:
    # --8<-- [start:connect]
    servers = load_config(config) if config else parse_config(DEFAULT_SERVERS)
    async with ActorSystem() as actors:
        registry = ToolRegistry()
        # One supervisor "mcp" with a connection actor "mcp:<server>" per server.
        await actors.start_supervisor(servers_spec(servers, registry=registry))
        for name in servers:
            await wait_ready(actors.lookup(f"mcp:{name}"), timeout=30)
        print(f"tools: {', '.join(sorted(registry.names()))}")
        # --8<-- [end:connect]

        llm = await actors.root.start_child(llm_spec())
        tools = await actors.root.start_child(tool_executor_spec("tools", registry=registry))
        store = await actors.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        agent = Agent(name="assistant", instructions="Use the tools to answer.")
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, registry)
            .store(StoreTurns(store))
            .agent(agent)
        )
        async with (
            SessionHost(actors, bundle.build()) as host,
            host.submit("chat-1", question) as events,
        ):
            async for event in events:
                match event:
                    case am.ToolCallStarted(name=name, arguments=arguments):
                        print(f"[tool] {name}({arguments})")
                    case am.ToolCallFinished(status=status, content=content):
                        print(f"[tool] -> {status}: {content}")
                    case am.TurnCompleted(result=result):
                        print(f"answer: {result.text}")
                    case _:
                        pass


if __name__ == "__main__":
    config = sys.argv[1] if len(sys.argv) > 1 else ""
    question = sys.argv[2] if len(sys.argv) > 2 else "What time is it in UTC?"
    trio.run(main, config, question)
