"""An MCP server's elicitation answered through ``agcore-actors serve --stdio`` as a real
process: the configured stdio MCP server (the official SDK's) asks for a name during the
tool call the (scripted) model makes; serve's output shows ``elicitation_requested``,
an ``elicitation`` line answers it, and the tool, then the model, get the answer."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.cli.agent_server import model_env, sent_messages, text, tool_call
from tests.peers import ROOT
from tests.peers.fault_server import FaultServer
from tests.peers.mcp import stdio_argv

pytestmark = pytest.mark.slow


def read_line(stream: IO[bytes], deadline: float) -> dict[str, Any]:
    """The next JSON line of ``stream``; fails the test past ``deadline`` (monotonic)."""
    left = deadline - time.monotonic()
    ready, _, _ = select.select([stream], [], [], max(0.0, left))
    assert ready, "serve said nothing in time"
    raw = stream.readline()
    assert raw, "serve ended early"
    line: dict[str, Any] = json.loads(raw)
    return line


def test_an_elicitation_is_answered_through_a_serve_process(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    python, app, mode = stdio_argv("mcp2")
    config = tmp_path / "agcore.toml"
    config.write_text(
        f"[mcpServers.srv]\ncommand = {json.dumps(python)}\nargs = {json.dumps([app, mode])}\n"
    )
    url, scenario = fault_server.script(tool_call("srv-ask", {}), text("Hello Ada."))
    argv = [sys.executable, "-m", "agcore_actors.cli", "serve", "--stdio"]
    process = subprocess.Popen(
        [*argv, "--config", str(config), "--store", str(tmp_path / "s.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=model_env(url, PYTHONPATH=str(ROOT)),
        cwd=tmp_path,
    )
    assert process.stdin is not None and process.stdout is not None
    events: list[dict[str, Any]] = []
    try:
        process.stdin.write(b'{"session": "s1", "text": "Ask me my name"}\n')
        process.stdin.flush()
        deadline = time.monotonic() + 90
        while not events or events[-1].get("event") not in ("turn_completed", "turn_failed"):
            line = read_line(process.stdout, deadline)
            events.append(line)
            if line.get("event") == "elicitation_requested":
                answer = {
                    "session": "s1",
                    "elicitation": line["elicitation_id"],
                    "action": "accept",
                    "content": {"name": "Ada"},
                }
                process.stdin.write(json.dumps(answer).encode() + b"\n")
                process.stdin.flush()
        process.stdin.close()
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    asked = [e for e in events if e.get("event") == "elicitation_requested"]
    assert len(asked) == 1 and asked[0]["message"] == "What is your name?", events
    assert [e["answered"] for e in events if e.get("event") == "elicitation"] == [True]
    assert events[-1]["event"] == "turn_completed", events[-1]
    assert events[-1]["result"]["text"] == "Hello Ada."
    tools = [m["content"] for m in sent_messages(scenario.requests[1].body) if m["role"] == "tool"]
    assert tools == ["accept Ada"]
    assert process.returncode == 0
