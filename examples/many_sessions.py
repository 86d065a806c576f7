"""Many sessions in one process: a SessionHost starts them on demand and evicts idle ones.

    python examples/many_sessions.py 200

Each conversation is a ``Session`` actor, started on its first message (from the
store, if it has history) under the host's supervisor. ``HostConfig`` bounds the
process: at most ``max_sessions`` sessions stay live (the least recently used idle one is
deactivated — persisted, closed, dropped — to make room), at most
``max_turns_in_flight`` turns run at once (the rest wait), and a session idle for
``idle_ttl`` seconds is deactivated too. A deactivated session costs only its stored
rows; its next message brings it back with its history.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.store import InMemorySessions, session_store_spec

from _model import llm_spec

LIMITS = HostConfig(max_sessions=50, max_turns_in_flight=16, idle_ttl=300.0)


async def main(users: int) -> None:
    async with ActorSystem() as actors:
        llm = await actors.root.start_child(llm_spec())
        store = await actors.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        agent = Agent(name="greeter", instructions="Greet the user by name, briefly.")
        bundle = AgentBuilder().provider(llm).store(StoreTurns(store)).agent(agent).build()
        async with SessionHost(actors, bundle, LIMITS) as host:
            results: dict[str, am.TurnResult] = {}

            async def chat(user: str) -> None:
                results[user] = await host.run(user, f"Hello, I am {user}.")

            # Every user at once: the host runs 16 turns at a time and keeps 50 live.
            async with trio.open_nursery() as nursery:
                for n in range(users):
                    nursery.start_soon(chat, f"user-{n}")
            completed = sum(r.status == "completed" for r in results.values())
            print(f"{completed} of {users} turns completed")
            stats = host.snapshot()
            print(f"live: {stats.live}, started: {stats.activated}, evicted: {stats.evicted_cap}")

            # An evicted session's next turn starts it again, from the store.
            evicted = next(user for user in results if not host.is_live(user))
            again = await host.run(evicted, "Do you remember my name?")
            print(f"{evicted} (evicted) again: {again.text}")
            stats = host.snapshot()
            print(f"live: {stats.live}, started: {stats.activated}")


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
