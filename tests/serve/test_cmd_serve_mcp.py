"""``agcore-actors serve --mcp`` as a real process: the official SDK's client starts it over
stdio (as Claude Desktop or Cursor would), lists the configured agent as a tool and calls
it twice in one session, and the turns are in the store; a non-loopback ``--http`` bind is
a usage error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from mcp import Client, StdioServerParameters

from tests.serve.helpers import fake_openai, serve_env, start_serve, stored


async def call_twice(params: StdioServerParameters) -> dict[str, Any]:
    """List the tools and call the agent twice in one session; the second reply's data."""
    with trio.fail_after(60):
        async with Client(params) as client:
            tools = await client.list_tools()
            assert [t.name for t in tools.tools] == ["assistant"]
            first = await client.call_tool("assistant", {"text": "hi"})
            assert not first.is_error, first
            data = first.structured_content
            assert isinstance(data, dict)
            assert data["status"] == "completed" and data["text"].strip() == "The answer is 5."
            second = await client.call_tool(
                "assistant", {"text": "again", "session": data["session"]}
            )
            assert not second.is_error, second
            assert isinstance(second.structured_content, dict)
            assert second.structured_content["session"] == data["session"]
            return second.structured_content


def test_the_sdk_client_calls_the_agent_of_serve_mcp_stdio(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    with fake_openai() as base:
        command = ["-m", "agcore_actors.cli", "serve", "--mcp", "--stdio", "--store", db]
        params = StdioServerParameters(
            command=sys.executable, args=command, env=serve_env(base), cwd=str(Path.cwd())
        )
        data = trio.run(call_twice, params)
    assert stored(tmp_path / "s.db", [data["session"]])[data["session"]].record.turns == 2


def test_serve_mcp_http_refuses_a_non_loopback_bind() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "serve", "--mcp", "--http", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "loopback" in result.stderr


def test_serve_mcp_stdio_exits_0_at_end_of_input(tmp_path: Path) -> None:
    with fake_openai() as base:
        process = start_serve(base, "--mcp", "--stdio", "--store", str(tmp_path / "s.db"))
        _, err = process.communicate(b"", timeout=60)
    assert process.returncode == 0, err.decode()
