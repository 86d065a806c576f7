"""Plans: the JSON parser's accepted shape and its four error cases, in order, and the
one-way step moves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.agent._errors import PlanParseError
from agcore_actors.agent._plan import JsonPlanParser, Step

PARSE = JsonPlanParser().parse


def test_accepted_shape_gives_pending_steps_in_order() -> None:
    plan = PARSE(
        '  {"steps": [{"description": "a", "index": 9}, {"description": ""}], "x": 1} ', "g"
    )
    assert plan.goal == "g" and len(plan.id) == 32
    assert [(s.index, s.description, s.status) for s in plan.steps] == [
        (0, "a", "pending"),
        (1, "", "pending"),
    ]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json", "invalid JSON"),
        ('```json\n{"steps": []}\n```', "invalid JSON"),
        ('{"steps": [{"description": "a"}]} trailing', "invalid JSON"),
        ("{}", "missing 'steps' array"),
        ('{"steps": {"description": "a"}}', "missing 'steps' array"),
        ('[{"description": "a"}]', "missing 'steps' array"),
        ('{"steps": [{"description": "a"}, {"description": 3}]}', "step 1 has no 'description'"),
        ('{"steps": ["a"]}', "step 0 has no 'description'"),
        ('{"steps": [{}, {"x": 1}]}', "step 0 has no 'description'"),
        ('{"steps": []}', "a plan needs at least one step"),
    ],
)
def test_each_bad_shape_is_a_plan_parse_error_naming_the_first_fault(raw: str, reason: str) -> None:
    with pytest.raises(PlanParseError) as caught:
        PARSE(raw, "g")
    assert reason in caught.value.reason
    assert isinstance(caught.value, ValueError) and caught.value.kind == "plan_parse"


def test_optional_steps_are_marked() -> None:
    plan = PARSE('{"steps": [{"description": "a", "optional": true}, {"description": "b"}]}', "g")
    assert [s.optional for s in plan.steps] == [True, False]


MOVES = {
    "pending": {"running", "skipped"},
    "running": {"completed", "failed"},
    "completed": set(),
    "failed": set(),
    "skipped": set(),
}


def _apply(step: Step, target: str) -> Step:
    if target == "running":
        return step.start()
    if target == "completed":
        return step.complete("out")
    if target == "failed":
        return step.fail("err")
    return step.skip("why")


@given(st.lists(st.sampled_from(["running", "completed", "failed", "skipped"]), max_size=6))
def test_steps_only_move_forward(targets: list[str]) -> None:
    step = Step(index=0, description="d")
    for target in targets:
        if target in MOVES[step.status]:
            step = _apply(step, target)
            assert step.status == target
        else:
            before = step
            with pytest.raises(ValueError):
                _apply(step, target)
            assert step == before
    assert step.is_terminal == (step.status in {"completed", "failed", "skipped"})
