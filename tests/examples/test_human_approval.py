"""examples/human_approval.py: the tool runs only when the person at the terminal says yes;
either way the model learns what happened."""

from __future__ import annotations

import pytest

from tests.examples.model import answer, bodies, run_example, tool_call
from tests.peers.fault_server import FaultServer

PROMPT = 'Allow pay({"to": "Ann", "amount_eur": 30})? [y/N] '


@pytest.mark.parametrize(
    ("typed", "status", "content"),
    [
        ("y\n", "ok", "paid 30 EUR to Ann"),
        ("n\n", "denied", "the user said no"),
        ("", "denied", "the user said no"),  # end of input: no
    ],
)
def test_the_approval_answer_decides_and_reaches_the_model(
    fault_server: FaultServer, typed: str, status: str, content: str
) -> None:
    base, scenario = fault_server.script(
        tool_call("pay", {"to": "Ann", "amount_eur": 30}, "call_p1"), answer("Done.")
    )
    done = run_example("human_approval", base, stdin=typed)
    assert done.returncode == 0, done.stderr
    # The typed answer is not echoed (stdin is a pipe): the prompt and the next line meet.
    asked, answer_line = done.stdout.splitlines()
    assert asked.startswith(PROMPT)
    tool_line = asked.removeprefix(PROMPT)
    assert tool_line.startswith(f"[tool] pay -> {status}: ") and content in tool_line
    assert answer_line == "answer: Done."
    result = bodies(scenario)[1]["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_p1"
    assert content in result["content"]
