"""A long-running bot: a supervised runtime, sessions in SQLite, idle ones evicted and resumed.

    python examples/supervised_bot.py bot.db --idle-ttl 60

Type lines of the form ``user: message`` (``/status`` shows the actor tree and the
host's counters; end of input stops the bot). Each user is a session:

- The runtime's actors (model, session store) run under one ``runtime`` supervisor,
  which restarts a crashed child with backoff; the sessions run under the
  SessionHost's own supervisor, which restarts a crashed session from the store.
- A session idle for ``--idle-ttl`` seconds is evicted: persisted (every turn already
  is, it is committed before it reports its end), closed, dropped from memory.
- Its next message resumes it from ``bot.db`` with its history — also after the bot is
  stopped and started again. Stopping drains: turns in flight get time to finish.
"""

from __future__ import annotations

import argparse
import sys

import trio

from agcore_actors import ActorSystem, SupervisorSpec
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.store import SqliteSessions, session_store_spec

from _model import llm_spec


def status(actors: ActorSystem, host: SessionHost) -> None:
    for row in actors.snapshot():
        print(f"  {row.kind} {row.name}: {row.state.value}, restarts={row.restarts}")
    stats = host.snapshot()
    print(f"  sessions: {stats.live} live, {stats.evicted_idle} evicted idle", flush=True)


async def main(path: str, idle_ttl: float) -> None:
    runtime = SupervisorSpec(
        "runtime",
        children=[llm_spec("llm"), session_store_spec("store", backend=SqliteSessions(path))],
    )
    async with ActorSystem() as actors:
        await actors.start_supervisor(runtime)
        bundle = (
            AgentBuilder()
            .provider(actors.lookup("llm"))
            .store(StoreTurns(actors.lookup("store")))
            .agent(Agent(name="bot", instructions="You are a friendly, brief assistant."))
            .build()
        )
        async with SessionHost(actors, bundle, HostConfig(idle_ttl=idle_ttl)) as host:
            while line := await trio.to_thread.run_sync(sys.stdin.readline):
                if line.strip() == "/status":
                    status(actors, host)
                    continue
                user, _, text = (part.strip() for part in line.partition(":"))
                if not user or not text:
                    print("  (type 'user: message')", flush=True)
                    continue
                # A session that is not live starts from what the store holds for it.
                how = "live" if host.is_live(user) else "activated"
                result = await host.run(user, text)
                print(f"bot -> {user} ({how}): {result.text or result.error}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A chat bot with resumable sessions.")
    parser.add_argument("db", help="the SQLite file of the sessions")
    parser.add_argument("--idle-ttl", type=float, default=60.0, help="seconds (default 60)")
    args = parser.parse_args()
    trio.run(main, args.db, args.idle_ttl)
