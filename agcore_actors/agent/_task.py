"""Plans run as turns: :func:`execute_plan` and :class:`TaskAgent`.

Each step is one turn of a session (``RunTurn(step.description)``), in order. A step
whose turn completes is ``completed`` with the answer; a failed or cancelled turn fails
the step. A failed step that is not optional stops the plan: every later step is
``skipped`` with the reason, and :attr:`Plan.failed_step` says which one stopped it.
The ``on_step_complete`` hook is awaited after every step that reaches a terminal state,
skipped ones included, with the plan as it is then; then the ``ON_PLAN_STEP_COMPLETE``
hooks of ``hooks`` (a :class:`~agcore_actors.llm.HookExecutor`, e.g. the provider's) run
with ``plan_step_index``: once per step, in step order. A hook that raises stops the plan
with that error (the steps after it stay pending).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..actor import ActorRef
from ..llm import HookContext, HookEvent, HookExecutor
from . import messages as am
from ._errors import PlanParseError
from ._plan import JsonPlanParser, Plan, PlanParser, Step

__all__ = ["DEFAULT_PLANNING_PROMPT", "StepHook", "TaskAgent", "execute_plan"]

#: Called after each step reaches a terminal state: ``(plan, step)``.
StepHook = Callable[[Plan, Step], Awaitable[None]]

DEFAULT_PLANNING_PROMPT = (
    "Split this goal into a short list of steps. Answer with JSON only, in the shape "
    '{{"steps": [{{"description": "..."}}]}}, and nothing else.\n\nGoal: {goal}'
)


async def _no_hook(plan: Plan, step: Step) -> None:
    return None


async def execute_plan(
    session: ActorRef[Any],
    plan: Plan,
    *,
    on_step_complete: StepHook = _no_hook,
    hooks: HookExecutor | None = None,
) -> Plan:
    """Run ``plan``'s pending steps as turns of ``session``; the plan with final statuses
    (``hooks``: see the module docstring)."""
    stopped_by: Step | None = None
    for step in plan.steps:
        if not step.is_pending:
            continue
        if stopped_by is not None:
            step = step.skip(f"step {stopped_by.index} failed")
        else:
            plan = plan.with_step(step.start())
            result: am.TurnResult = await session.ask(am.RunTurn(text=step.description))
            running = plan.steps[step.index]
            if result.status == "completed":
                step = running.complete(result.text)
            else:
                why = result.error_kind or result.status
                step = running.fail(f"{why}: {result.error}" if result.error else why)
                if not step.optional:
                    stopped_by = step
        plan = plan.with_step(step)
        await on_step_complete(plan, step)
        if hooks:
            await hooks.execute(
                HookContext(HookEvent.ON_PLAN_STEP_COMPLETE, plan_step_index=step.index)
            )
    return plan


class TaskAgent:
    """Plans a goal with the session's model, then runs the plan step by step.

    ``run(goal)`` asks the session for a plan (``planning_prompt`` formatted with
    ``goal``), parses the answer with ``parser`` (a :class:`PlanParseError` if it cannot),
    then :func:`execute_plan` (with ``on_step_complete`` and ``hooks``).
    ``execute_plan(plan)`` runs a plan made elsewhere.
    """

    def __init__(
        self,
        session: ActorRef[Any],
        *,
        parser: PlanParser | None = None,
        planning_prompt: str = DEFAULT_PLANNING_PROMPT,
        on_step_complete: StepHook = _no_hook,
        hooks: HookExecutor | None = None,
    ) -> None:
        self.session = session
        self.parser = parser or JsonPlanParser()
        self.planning_prompt = planning_prompt
        self.on_step_complete = on_step_complete
        self.hooks = hooks

    async def run(self, goal: str) -> Plan:
        answer: am.TurnResult = await self.session.ask(
            am.RunTurn(text=self.planning_prompt.format(goal=goal))
        )
        if answer.status != "completed":
            raise PlanParseError(f"no plan: the planning turn {answer.status}: {answer.error}")
        plan = self.parser.parse(answer.text, goal)
        return await self.execute_plan(plan)

    async def execute_plan(self, plan: Plan) -> Plan:
        return await execute_plan(
            self.session, plan, on_step_complete=self.on_step_complete, hooks=self.hooks
        )
