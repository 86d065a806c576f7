"""A plan: the model splits a goal into steps, then each step runs as a turn.

    python examples/plan.py "Organise a picnic on Saturday"

:class:`~agcore_actors.agent.TaskAgent` asks the session's model for a plan in JSON
(``{"steps": [{"description": ...}]}``), parses it with ``JsonPlanParser`` and runs
the steps in order with :func:`~agcore_actors.agent.execute_plan`: each step is one
``RunTurn`` of the same session, so later steps see what earlier ones answered. A
failed step stops the plan and every later step is ``skipped``; a plan made elsewhere
(``Plan(goal, steps=[...])``) runs the same way through ``execute_plan``.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, Plan, Step, StoreTurns, TaskAgent, session_spec
from agcore_actors.store import InMemorySessions, session_store_spec

from _model import llm_spec


async def progress(plan: Plan, step: Step) -> None:
    """Called after every step that reaches its end (skipped ones too)."""
    detail = step.output if step.status == "completed" else step.error
    print(f"  step {step.index + 1}/{len(plan.steps)} {step.status}: {detail}")


async def main(goal: str) -> None:
    async with ActorSystem() as actors:
        llm = await actors.root.start_child(llm_spec())
        store = await actors.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        planner = Agent(name="planner", instructions="You plan small tasks and carry them out.")
        bundle = AgentBuilder().provider(llm).store(StoreTurns(store)).agent(planner).build()
        # One session, started directly under the root supervisor (no SessionHost needed).
        session = await actors.root.start_child(session_spec("picnic", bundle))
        print(f"goal: {goal}")
        plan = await TaskAgent(session, on_step_complete=progress).run(goal)
    done = sum(step.status == "completed" for step in plan.steps)
    print(f"{done} of {len(plan.steps)} steps completed")
    if plan.failed_step is not None:
        sys.exit(1)


if __name__ == "__main__":
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "Organise a picnic on Saturday")
