"""``agcore-actors chat`` in a real pseudo-terminal answers an MCP server's elicitation
inline: the official SDK's server (over stdio, a real process) asks for a name during a
tool call, the person types it at the prompt, and the tool gets it; ``n`` declines, and
an answer of the wrong type is asked again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pexpect  # type: ignore[import-untyped]  # no stubs in the dev environment
import pytest

from tests.cli.agent_server import model_env, sent_messages, text, tool_call
from tests.cli.test_cmd_chat import PROMPT, children
from tests.peers import ROOT
from tests.peers.fault_server import FaultServer
from tests.peers.mcp import stdio_argv

__all__ = ["children"]

pytestmark = pytest.mark.slow


def spawn(url: str, tmp_path: Path) -> pexpect.spawn:
    """``chat`` of this checkout (PYTHONPATH: the cwd is the test's directory)."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agcore_actors.cli", "chat", "--store", str(tmp_path / "s.db")],
        env=model_env(url, TERM="xterm-256color", PYTHONPATH=str(ROOT)),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 160),
    )
    child.expect(PROMPT)
    return child


def tool_results(body: Any) -> list[str]:
    return [m["content"] for m in sent_messages(body) if m["role"] == "tool"]


def test_an_elicitation_is_answered_at_the_chat_prompt(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    python, app, mode = stdio_argv("mcp2")
    (tmp_path / "agcore.toml").write_text(
        f"[mcpServers.srv]\ncommand = {json.dumps(python)}\nargs = {json.dumps([app, mode])}\n"
    )
    ask = tool_call("srv-ask", {})
    url, scenario = fault_server.script(ask, text("Hello Ada."), ask, text("No name."))
    child = spawn(url, tmp_path)
    children.append(child)

    child.sendline("Ask me my name")
    child.expect_exact("srv asks: What is your name?")
    child.expect_exact("answer? [Y/n]")
    child.sendline("y")
    child.expect_exact("(string): ")
    child.sendline("Ada")
    child.expect_exact("Hello Ada.")
    child.expect(PROMPT)
    assert tool_results(scenario.requests[1].body) == ["accept Ada"]

    child.sendline("Ask again")
    child.expect_exact("answer? [Y/n]")
    child.sendline("n")
    child.expect_exact("No name.")
    child.expect(PROMPT)
    assert tool_results(scenario.requests[3].body)[-1] == "decline"
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
