"""The code of docs/sessions.md, run by tests/docs/test_snippets.py."""

from __future__ import annotations

from pathlib import Path

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.llm import Provider, ProviderRegistry, provider_spec
from agcore_actors.store import SqliteSessions, session_store_spec


async def main(model: Provider, path: Path) -> list[str]:
    """``model``: ``OpenAICompatibleProvider(OpenAIConfig(...))`` in a bot; the tests
    pass a ``ScriptedProvider``."""
    lines: list[str] = []
    # --8<-- [start:host]
    async with ActorSystem() as system:
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(model))
        )
        store = await root.start_child(
            session_store_spec("store", backend=SqliteSessions(str(path / "bot.db")))
        )
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store))
            .agent(Agent(name="helper", instructions="Answer in one sentence."))
            .build()
        )
        limits = HostConfig(idle_ttl=300.0, max_sessions=1_000, max_turns_in_flight=64)
        async with SessionHost(system, bundle, limits) as host:
            result = await host.run("user-42", "Hello!")  # starts user-42, or loads it
            info = await host.ask("user-42", am.GetSessionInfo())
            lines.append(f"{result.status}: {result.text} ({info.turns} turn(s) stored)")
            await host.ask("user-42", am.SetFacts(set={"name": "Ann"}))  # in every prompt
            lines.append(f"live: {host.snapshot().live}")
    # --8<-- [end:host]
    return lines
