"""Facts a session acknowledges are stored: with the running turn's commit, else at once.

The store here takes a second for each facts write, as a real one takes its time (SQLite
answers from its writer thread); the in-memory store may answer within the asker's task.
"""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.agent._config import Agent, AgentConfig
from agcore_actors.agent._session import Session
from agcore_actors.agent._turn import TurnPorts
from agcore_actors.llm import AssistantMessage, ProviderRegistry, RetryConfig, provider_actor
from agcore_actors.tools import ToolExecutor, ToolRegistry
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, stored


class SlowFacts(StoreTurns):
    async def set_facts(
        self, session: str, version: int, facts_set: dict[str, str], facts_removed: list[str]
    ) -> int:
        await trio.sleep(1)
        return await super().set_facts(session, version, facts_set, facts_removed)


async def start(system: ActorSystem, script: list[list[Any]]) -> tuple[ActorRef[Any], Any]:
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    tools = ToolRegistry([])
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    store_ref, _ = await start_store(system)
    ports = TurnPorts(provider=llm, tools=executor, definitions=tools.definitions)
    ref = await system.spawn(
        lambda: Session(
            "s1",
            agents={"a": Agent(name="a")},
            default_agent="a",
            ports=ports,
            store=SlowFacts(store_ref),
            config=AgentConfig(),
        ),
        name="session:s1",
    )
    return store_ref, ref


async def test_facts_set_together_while_idle_are_all_stored_without_a_turn(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, ref = await start(system, [[AssistantMessage("ok")]])
    async with trio.open_nursery() as nursery:
        for i in range(3):
            nursery.start_soon(ref.ask, am.SetFacts(set={f"k{i}": str(i)}))
    snapshot = await stored(store, "s1")
    assert snapshot is not None and snapshot.facts == {"k0": "0", "k1": "1", "k2": "2"}
    info = await ref.ask(am.GetSessionInfo())
    assert info.facts == snapshot.facts


async def test_facts_set_while_a_turn_runs_are_stored_with_its_commit(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, ref = await start(system, [[5.0, AssistantMessage("ok")]])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.ask, am.RunTurn(text="hi"))
        await trio.sleep(1)  # the turn waits for its model reply
        await ref.ask(am.SetFacts(set={"during": "turn"}))
        snapshot = await stored(store, "s1")
        assert snapshot is not None and snapshot.facts == {}  # not before the commit
    snapshot = await stored(store, "s1")
    assert snapshot is not None and snapshot.facts == {"during": "turn"}
