"""Plans as turns, agents as tools, agent switching and session facts in the prompt."""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    JsonPlanParser,
    Plan,
    Step,
    TaskAgent,
    execute_plan,
    session_spec,
    transcript_errors,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    ProviderRegistry,
    RetryConfig,
    SystemMessage,
    ToolCall,
    provider_actor,
)
from agcore_actors.testing import ScriptedProvider
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, stored, transcript


async def setup(
    system: ActorSystem, script: list[list[Any]], *agents: Agent
) -> tuple[ActorRef[Any], ScriptedProvider, ActorRef[Any]]:
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    store_ref, store = await start_store(system)
    bundle = AgentBuilder().provider(llm).store(store).agents(agents).build()
    session = await system.root.start_child(session_spec("s1", bundle))
    return store_ref, provider, session


async def test_a_plan_runs_step_by_step_and_stops_at_a_failed_step(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script: list[list[Any]] = [
        [AssistantMessage("did a")],
        [RuntimeError("boom")],  # a crash of the provider: the step fails
        [AssistantMessage("never")],
    ]
    _, _, session = await setup(system, script, Agent(name="a"))
    plan = JsonPlanParser().parse(
        '{"steps": [{"description": "a"}, {"description": "b"}, {"description": "c"}]}', "g"
    )
    seen: list[tuple[int, str]] = []

    async def hook(plan: Plan, step: Step) -> None:
        seen.append((step.index, step.status))

    done = await execute_plan(session, plan, on_step_complete=hook)
    assert [s.status for s in done.steps] == ["completed", "failed", "skipped"]
    assert done.steps[0].output == "did a" and done.failed_step == done.steps[1]
    assert seen == [(0, "completed"), (1, "failed"), (2, "skipped")]
    assert not done.succeeded


async def test_task_agent_plans_with_the_model_then_executes(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script: list[list[Any]] = [
        [AssistantMessage('{"steps": [{"description": "one"}, {"description": "two"}]}')],
        [AssistantMessage("1")],
        [AssistantMessage("2")],
    ]
    _, provider, session = await setup(system, script, Agent(name="a"))
    plan = await TaskAgent(session).run("count")
    assert plan.succeeded and [s.output for s in plan.steps] == ["1", "2"]
    assert "Goal: count" in str(provider.requests[0].messages[-1].content)


async def test_an_agent_called_as_a_tool_runs_a_child_session(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ask = ToolCall("k1", FunctionCall("researcher", '{"task": "find x"}'))
    script: list[list[Any]] = [
        [AssistantMessage(None, tool_calls=[ask])],  # lead asks the researcher
        [AssistantMessage("x is 42")],  # the researcher's answer (child turn)
        [AssistantMessage("The researcher says 42.")],  # lead's final answer
    ]
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    store, provider, session = await setup(system, script, lead, researcher)
    result = await session.ask(am.RunTurn(text="what is x?"))
    assert result.status == "completed" and result.text == "The researcher says 42."
    assert result.usage.input_tokens == 30  # the child's call rolled up
    offered = [t.function.name for t in provider.requests[0].tools or []]
    assert offered == ["researcher"]
    child = await transcript(store, "s1/k1")
    assert [m.content for m in child] == ["find x", "x is 42"]
    parent = await transcript(store, "s1")
    assert transcript_errors(parent) == [] and parent[2].content == "x is 42"


async def test_switching_agents_keeps_history_and_records_the_switch(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script: list[list[Any]] = [[AssistantMessage("one")], [AssistantMessage("two")]]
    first = Agent(name="build", instructions="You build.")
    second = Agent(name="plan", instructions="You plan.")
    store, provider, session = await setup(system, script, first, second)
    await session.ask(am.RunTurn(text="hi"))
    assert await session.ask(am.SwitchAgent("plan")) == "build"
    await session.ask(am.SetFacts(set={"db": "PostgreSQL"}))
    await session.ask(am.RunTurn(text="next"))
    sent = provider.requests[1].messages
    assert sent[0] == SystemMessage(
        "You plan.\n\n<session-context>\ndb: PostgreSQL\n</session-context>"
    )
    assert [getattr(m, "content", None) for m in sent[1:3]] == ["hi", "one"]
    assert "now handled by agent 'plan'" in str(sent[3].content)
    saved = await stored(store, "s1")
    assert saved is not None
    assert saved.record.agent == "plan" and saved.facts == {"db": "PostgreSQL"}
    info = await session.ask(am.GetSessionInfo())
    assert info.agent == "plan" and info.turns == 2
