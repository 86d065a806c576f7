"""A tool loop: the model asks for a tool, the tool runs, the model answers with its result.

    python examples/tool_loop.py "What's the weather in Paris?"

The runtime is a few actors under the root supervisor: the model (``ProviderActor``),
the tools (``ToolExecutor``: each call validated against its JSON Schema and run under
its own timeout) and the session store. A :class:`~agcore_actors.agent.SessionHost`
runs the turn in a ``Session`` actor: model call → tool calls (in parallel) → model
call ... until the model answers in text or ``max_tool_turns`` is reached; every step
streams back as an event, and the whole turn is committed to the store.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec

from _model import llm_spec


@function_tool
async def get_weather(city: str) -> dict[str, object]:
    """The current weather of a city."""
    # A real tool would call a weather service here; it may take its time: the
    # executor cancels it after its timeout (60 s by default) and tells the model so.
    return {"city": city, "temperature": 22, "condition": "sunny"}


async def main(question: str) -> list[str]:
    lines: list[str] = []
    async with ActorSystem() as actors:
        root = actors.root
        llm = await root.start_child(llm_spec())
        registry = ToolRegistry([get_weather])
        tools = await root.start_child(tool_executor_spec("tools", registry=registry))
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, registry)
            .store(StoreTurns(store))
            .agent(Agent(name="weather", instructions="Use get_weather for any weather question."))
            .build()
        )
        async with SessionHost(actors, bundle) as host, host.submit("chat-1", question) as events:
            async for event in events:
                match event:
                    case am.ToolCallStarted(name=name, arguments=arguments):
                        lines.append(f"[tool] {name}({arguments})")
                    case am.ToolCallFinished(status=status, content=content):
                        lines.append(f"[tool] -> {status}: {content}")
                    case am.TurnCompleted(result=result):
                        lines.append(f"answer: {result.text}")
                        lines.append(
                            f"{result.model_calls} model call(s), {result.tool_calls} tool call(s)"
                        )
                    case am.TurnFailed(result=result) | am.TurnCancelled(result=result):
                        lines.append(f"turn {result.status}: {result.error_kind} {result.error}")
                    case _:
                        pass  # text deltas, usage, ...: see streaming_events.py
    return lines


if __name__ == "__main__":
    print(
        "\n".join(
            trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "What's the weather in Paris?")
        )
    )
