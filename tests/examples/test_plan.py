"""examples/plan.py: a planning turn, then one turn per step in order, each seeing the
earlier ones; a failed step skips the rest."""

from __future__ import annotations

import json

from tests.examples.model import answer, bodies, run_example
from tests.peers.fault_server import FaultServer, error_reply

PLAN = json.dumps(
    {"steps": [{"description": "Pick a park."}, {"description": "Write the shopping list."}]}
)


def test_each_step_runs_as_a_turn_that_sees_the_earlier_ones(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(
        answer(PLAN), answer("Riverside Park."), answer("Bread, cheese, grapes.")
    )
    done = run_example("plan", base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "goal: Organise a picnic on Saturday",
        "  step 1/2 completed: Riverside Park.",
        "  step 2/2 completed: Bread, cheese, grapes.",
        "2 of 2 steps completed",
    ]
    planning, first, second = bodies(scenario)
    assert "Goal: Organise a picnic on Saturday" in planning["messages"][-1]["content"]
    assert first["messages"][-1]["content"] == "Pick a park."
    assert [m["content"] for m in second["messages"][-3:]] == [
        "Pick a park.",
        "Riverside Park.",
        "Write the shopping list.",
    ]


def test_a_failed_step_skips_the_rest(fault_server: FaultServer) -> None:
    three = json.dumps({"steps": [{"description": d} for d in ("One.", "Two.", "Three.")]})
    base, scenario = fault_server.script(
        answer(three), answer("1"), error_reply(400, "bad request")
    )
    done = run_example("plan", base)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "  step 1/3 completed: 1"
    assert lines[2].startswith("  step 2/3 failed: ")
    assert lines[3:] == ["  step 3/3 skipped: step 1 failed", "1 of 3 steps completed"]
    assert len(scenario.requests) == 3
