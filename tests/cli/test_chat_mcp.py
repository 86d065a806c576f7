"""``agcore-actors chat`` in a real pseudo-terminal with the official SDK's MCP server
(over stdio, a real process): an elicitation is answered inline (the server asks for a
name during a tool call, the person types it at the prompt, the tool gets it; ``n``
declines), and the server's prompts are slash commands whose filled-in text is the
turn's message."""

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


def configure(tmp_path: Path) -> None:
    python, app, mode = stdio_argv("mcp2")
    (tmp_path / "agcore.toml").write_text(
        f"[mcpServers.srv]\ncommand = {json.dumps(python)}\nargs = {json.dumps([app, mode])}\n"
    )


def test_an_elicitation_is_answered_at_the_chat_prompt(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    configure(tmp_path)
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


def test_a_servers_prompt_is_a_slash_command(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    configure(tmp_path)
    url, scenario = fault_server.script(text("Looks fine."), text("Fine too."))
    child = spawn(url, tmp_path)
    children.append(child)
    child.sendline("/help")
    child.expect_exact("/srv:review code=...  Ask for a review of CODE.")
    child.expect(PROMPT)
    child.sendline("/srv:review")  # its one argument is required
    child.expect_exact("error: missing code; usage: /srv:review code=...")
    child.expect(PROMPT)
    child.sendline("/srv:review x = 1")  # one argument: the rest of the line
    child.expect_exact("Looks fine.")
    child.expect(PROMPT)
    child.sendline("/srv:review code='y = 2'")
    child.expect_exact("Fine too.")
    child.expect(PROMPT)
    users = [
        [m["content"] for m in sent_messages(request.body) if m["role"] == "user"][-1]
        for request in scenario.requests
    ]
    assert users == ["Please review: x = 1", "Please review: y = 2"]
