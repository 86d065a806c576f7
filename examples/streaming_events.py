"""Streaming a turn's events, and cancelling a turn half-way.

    python examples/streaming_events.py

``host.submit(session, text)`` streams every step of a turn as a typed event (the
protocol is :mod:`agcore_actors.agent.messages`): the answer's text as it arrives,
reasoning, tool calls, usage, retries, compaction, and exactly one final event —
``TurnCompleted``, ``TurnCancelled`` or ``TurnFailed``.

The second turn is cancelled as soon as its first words arrive: the HTTP request to
the model is closed at once, and the turn is still committed to the store with the
words already shown (marked ``[interrupted]``), so the third turn sees what the user saw.
"""

from __future__ import annotations

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.store import InMemorySessions, session_store_spec

from _model import llm_spec


def show(event: am.TurnEvent) -> None:
    """Print one event: text inline as it streams, everything else on its own line."""
    match event:
        case am.TurnStarted(turn=turn, agent=agent):
            print(f"[started] turn {turn} with agent {agent}")
        case am.TextDelta(text=text) | am.ContentStarted(text=text):
            print(text, end="", flush=True)
        case am.ThinkingDelta(text=text):
            print(f"[thinking] {text}")
        case am.UsageReported(usage=usage):
            print(f"\n[usage] {usage.total_input_tokens} in, {usage.output_tokens} out")
        case am.RetryingModel(attempt=attempt, delay=delay, error=error):
            print(f"[retry] attempt {attempt} in {delay:.1f} s after {error}")
        case am.TurnCompleted(result=result):
            print(f"[done] completed after {result.model_calls} model call(s)")
        case am.TurnCancelled(result=result):
            print(f"\n[done] cancelled after {result.model_calls} model call(s), committed")
        case am.TurnFailed(result=result):
            print(f"[done] failed: {result.error_kind}: {result.error}")
        case _:
            print(f"[{type(event).__name__}]")


async def main() -> None:
    async with ActorSystem() as actors:
        llm = await actors.root.start_child(llm_spec())
        store = await actors.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        agent = Agent(name="jester", instructions="You tell short jokes.")
        bundle = AgentBuilder().provider(llm).store(StoreTurns(store)).agent(agent).build()
        async with SessionHost(actors, bundle) as host:
            async with host.submit("chat-1", "Tell me a joke.") as events:
                async for event in events:
                    show(event)

            async with host.submit("chat-1", "Now tell me a very long story.") as events:
                async for event in events:
                    show(event)
                    if isinstance(event, am.TextDelta):
                        # Enough: cancel now (CancelTurn("after_turn") would stop at the next
                        # model/tool boundary instead). Leaving the `async with` early
                        # cancels the turn too.
                        await host.cancel("chat-1")

            # The cancelled turn is in the history: the model sees the question it was
            # asked and the start of its answer the user saw ("... [interrupted]").
            async with host.submit("chat-1", "Just tell me how it ends.") as events:
                async for event in events:
                    show(event)


if __name__ == "__main__":
    trio.run(main)
