"""examples/first_bot.py (the script of docs/getting-started.md): the configuration's
model, reached over real HTTP, calls the script's tool, and the answer is printed."""

from __future__ import annotations

from pathlib import Path

from tests.examples.model import answer, bodies, run_example, tool_call
from tests.peers.fault_server import FaultServer


def test_the_first_bot_calls_its_tool_and_prints_the_answer(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    base, scenario = fault_server.script(
        tool_call("word_count", {"text": "the quick brown fox"}, "call_1"),
        answer("There are ", "4 words."),
    )
    # A clean HOME: no user's agcore config; the environment names the model.
    done = run_example("first_bot", base, env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["There are 4 words.", "2 model call(s), 1 tool call(s)"]
    first, second = bodies(scenario)
    assert [t["function"]["name"] for t in first["tools"]] == ["word_count"]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "4"}
