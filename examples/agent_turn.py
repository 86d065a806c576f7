"""An agent turn end to end: model → tool → model, streamed, stored, on a scripted model.

Run it with ``.venv/bin/python examples/agent_turn.py``. It needs no network: the model is
``agcore_actors.testing.ScriptedProvider`` behind the real ProviderActor. Swap in
``OpenAICompatibleProvider(OpenAIConfig(base_url=..., api_key=..., model=...))`` to talk to
a real one; nothing else changes.
"""

from __future__ import annotations

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.llm import ProviderRegistry, provider_spec
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


MODEL = ScriptedProvider(
    [
        ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 17, "b": 25})]),
        ScriptedReply(text=["17 + 25 ", "= 42."]),
    ]
)


async def main() -> list[str]:
    lines: list[str] = []
    async with ActorSystem() as system:
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(MODEL))
        )
        tools = ToolRegistry([add])
        executor = await root.start_child(tool_executor_spec("tools", registry=tools))
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(executor, tools)
            .store(StoreTurns(store))
            .agent(Agent(name="calculator", instructions="Use the add tool for sums."))
            .build()
        )
        async with (
            SessionHost(system, bundle) as host,
            host.submit("chat-1", "What is 17 + 25?") as events,
        ):
            async for event in events:
                match event:
                    case am.ToolCallStarted(name=name, arguments=arguments):
                        lines.append(f"[tool] {name}({arguments})")
                    case am.ToolCallFinished(status=status, content=content):
                        lines.append(f"[tool] -> {status}: {content}")
                    case am.TurnCompleted(result=result):
                        lines.append(f"answer: {result.text}")
                        lines.append(f"usage: {result.model_calls} model calls")
                    case _:
                        pass
    return lines


if __name__ == "__main__":
    print("\n".join(trio.run(main)))
