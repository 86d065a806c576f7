"""examples/mcp_tools.py: a real MCP server's tool, called by the model over real HTTP,
its result reaching the model's next call."""

from __future__ import annotations

import json
from pathlib import Path

from tests.examples.model import answer, bodies, run_example, tool_call
from tests.peers import mcp
from tests.peers.fault_server import FaultServer


def test_an_mcp_tool_result_reaches_the_model(fault_server: FaultServer, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    server = {"command": mcp.time_server_command(), "args": ["--local-timezone", "UTC"]}
    config.write_text(json.dumps({"mcpServers": {"clock": server}}))
    base, scenario = fault_server.script(
        tool_call("clock-get_current_time", {"timezone": "Asia/Tokyo"}, "call_t1"),
        answer("It is evening in Tokyo."),
    )
    done = run_example("mcp_tools", base, str(config), "What time is it in Tokyo?")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "tools: clock-convert_time, clock-get_current_time"
    assert lines[1] == '[tool] clock-get_current_time({"timezone": "Asia/Tokyo"})'
    assert lines[2] == "[tool] -> ok: {"  # the server's JSON, over several lines
    assert lines[-1] == "answer: It is evening in Tokyo."
    first, second = bodies(scenario)
    offered = {tool["function"]["name"] for tool in first["tools"]}
    assert offered == {"clock-convert_time", "clock-get_current_time"}
    result = second["messages"][-1]
    assert result["tool_call_id"] == "call_t1"
    assert json.loads(result["content"])["timezone"] == "Asia/Tokyo"
