"""Hostile model output the agent parses itself: plan JSON, structured output, and the
arguments of a sub-agent call. Each ends in a typed error (or a clean result) and the
session still runs its next turn.

Hypothesis drives :class:`JsonPlanParser`; the corpus (``corpus/plan``) is the model's
answer to a :class:`TaskAgent`'s planning turn, and doubles as structured output and as a
sub-agent call's arguments, through a real session on trio's virtual clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    JsonPlanParser,
    Plan,
    PlanParseError,
    TaskAgent,
    session_spec,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    ProviderRegistry,
    RetryConfig,
    ToolCall,
    provider_actor,
)
from tests.agent.fakes import scripted
from tests.agent.stores import start_store
from tests.hostile.hostile import corpus, json_values, mangled, shaped, to_bytes

_junk = json_values(st.sampled_from(["steps", "description", "optional"]))
_plans = shaped(
    {"steps": [{"description": st.text(max_size=8), "optional": st.booleans() | _junk}]}, _junk
)
_texts = mangled(_plans.map(to_bytes)).map(lambda b: b.decode("utf-8", "replace"))


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_any_plan_text_is_a_plan_or_a_plan_parse_error(text: str) -> None:
    try:
        plan = JsonPlanParser().parse(text, "goal")
    except PlanParseError:
        return
    assert plan.steps and all(isinstance(s.description, str) for s in plan.steps)
    assert [s.index for s in plan.steps] == list(range(len(plan.steps)))


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


CASES = [pytest.param(read(p), id=p.name) for p in corpus("plan")]


class Answer(msgspec.Struct):
    data: Any
    note: str = ""


async def _session(system: ActorSystem, script: list[list[Any]], *agents: Agent) -> Any:
    llm = await system.spawn(
        provider_actor(
            ProviderRegistry().register(scripted(script)), retry=RetryConfig(max_retries=0)
        ),
        name="llm",
    )
    _, store = await start_store(system)
    bundle = AgentBuilder().provider(llm).store(store).agents(agents).build()
    return await system.root.start_child(session_spec("s1", bundle))


async def _next_turn_runs(session: ActorRef[Any], script: list[list[Any]]) -> None:
    script[:] = [[AssistantMessage("still here")]]
    again = await session.ask(am.RunTurn(text="and now?"))
    assert again.status == "completed" and again.text == "still here", again


@pytest.mark.parametrize("text", CASES)
async def test_corpus_plan_answer_is_a_plan_or_a_plan_parse_error(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, text: str
) -> None:
    script: list[list[Any]] = [[AssistantMessage(text)]]
    session = await _session(system, script, Agent(name="a"))
    with trio.fail_after(600):
        try:
            plan = await TaskAgent(session).run("goal")
        except PlanParseError:
            pass
        else:
            assert isinstance(plan, Plan)
        await _next_turn_runs(session, script)


@pytest.mark.parametrize("text", CASES)
async def test_corpus_as_structured_output_ends_the_turn_with_a_kind(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, text: str
) -> None:
    script: list[list[Any]] = [[AssistantMessage(text)]]
    session = await _session(system, script, Agent(name="a", output_type=Answer))
    with trio.fail_after(600):
        result = await session.ask(am.RunTurn(text="answer as JSON"))
        assert result.status in ("completed", "failed"), result
        if result.status == "failed":
            assert result.error_kind == "output_validation", result
        script[:] = [[AssistantMessage('{"data": 1}')]]
        again = await session.ask(am.RunTurn(text="and now?"))
        assert again.status == "completed", again


@pytest.mark.parametrize("text", CASES)
async def test_corpus_as_subagent_arguments_is_refused_or_run(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, text: str
) -> None:
    ask = ToolCall("k1", FunctionCall("researcher", text))
    script: list[list[Any]] = [
        [AssistantMessage(None, tool_calls=[ask])],
        [AssistantMessage("done")],
    ]
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    session = await _session(system, script, lead, Agent(name="researcher", description="R."))
    with trio.fail_after(600):
        result = await session.ask(am.RunTurn(text="delegate"))
        assert result.status == "completed", result
        await _next_turn_runs(session, script)
