"""Human approval: a tool that may only run once a person says yes.

    python examples/human_approval.py "Pay Ann 30 EUR"

A tool made with ``requires_approval=True`` does not run when the model asks for it:
the executor asks its approver, here :func:`~agcore_actors.agent.session_approver`,
which shows the request to whoever runs the turn as an ``ApprovalRequested`` event and
waits for ``host.approve(...)``. A denial (or no answer within
``AgentConfig.approval_timeout``) reaches the model as a ``denied`` tool result with
the reason, and the turn goes on.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns, session_approver
from agcore_actors.agent import messages as am
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec

from _model import llm_spec


@function_tool(requires_approval=True)
async def pay(to: str, amount_eur: int) -> str:
    """Send money to someone."""
    return f"paid {amount_eur} EUR to {to}"


async def ask_human(question: str) -> bool:
    """Ask on the terminal, without blocking the other actors (input() runs on a thread)."""
    try:
        answer = await trio.to_thread.run_sync(input, question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def main(request: str) -> None:
    async with ActorSystem() as actors:
        root = actors.root
        llm = await root.start_child(llm_spec())
        registry = ToolRegistry([pay])
        tools = await root.start_child(
            tool_executor_spec("tools", registry=registry, approver=session_approver(actors))
        )
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        agent = Agent(name="treasurer", instructions="Use the pay tool to make payments.")
        bundle = AgentBuilder().provider(llm).tools(tools, registry).store(StoreTurns(store))
        async with (
            SessionHost(actors, bundle.agent(agent).build()) as host,
            host.submit("chat-1", request) as events,
        ):
            async for event in events:
                match event:
                    case am.ApprovalRequested(call_id=call_id, name=name, arguments=args):
                        allowed = await ask_human(f"Allow {name}({args})? [y/N] ")
                        reason = "" if allowed else "the user said no"
                        await host.approve("chat-1", call_id, allowed, reason)
                    case am.ToolCallFinished(name=name, status=status, content=content):
                        print(f"[tool] {name} -> {status}: {content}")
                    case am.TurnCompleted(result=result):
                        print(f"answer: {result.text}")
                    case _:
                        pass


if __name__ == "__main__":
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "Pay Ann 30 EUR for the tickets.")
