"""examples/tool_loop.py: model → tool → model over real HTTP."""

from __future__ import annotations

import json

from tests.examples.model import answer, bodies, run_example, tool_call
from tests.peers.fault_server import FaultServer


def test_the_tool_result_reaches_the_second_model_call(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(
        tool_call("get_weather", {"city": "Paris"}, "call_w1"),
        answer("It is sunny ", "in Paris, 22 °C."),
    )
    done = run_example("tool_loop", base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '[tool] get_weather({"city": "Paris"})',
        '[tool] -> ok: {"city":"Paris","temperature":22,"condition":"sunny"}',
        "answer: It is sunny in Paris, 22 °C.",
        "2 model call(s), 1 tool call(s)",
    ]
    first, second = bodies(scenario)
    assert [tool["function"]["name"] for tool in first["tools"]] == ["get_weather"]
    assert first["messages"][-1] == {"role": "user", "content": "What's the weather in Paris?"}
    call, result = second["messages"][-2:]
    assert call["tool_calls"][0]["id"] == "call_w1"
    assert result["role"] == "tool" and result["tool_call_id"] == "call_w1"
    assert json.loads(result["content"]) == {
        "city": "Paris",
        "temperature": 22,
        "condition": "sunny",
    }
