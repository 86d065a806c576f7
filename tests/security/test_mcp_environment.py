"""A stdio MCP server sees only the environment allow-list: the default variables, the
ones its config names in ``inherit_env``, and its own ``env`` — never the API keys and
other secrets of the process that starts it. Checked in the child's real environment."""

from __future__ import annotations

import json
import sys

import pytest
import trio

from agcore_actors.mcp import StdioServer, open_client
from agcore_actors.mcp.policy import DEFAULT_INHERITED_ENV
from tests.hostile.mcp_server import __file__ as SERVER

SECRETS = {
    "OPENAI_API_KEY": "sk-parent-openai-7f3a",
    "ANTHROPIC_API_KEY": "sk-ant-parent-91bd",
    "AWS_SECRET_ACCESS_KEY": "parent-aws-secret-55e0",
    "AGCORE_SERVE_TOKEN": "parent-serve-token-c2d4",
    "GITHUB_TOKEN": "ghp_parentgithub0000",
}
#: Set by CPython itself in a child whose locale is C (PEP 538 locale coercion).
PYTHON_OWN = {"LC_CTYPE"}


async def environ_of(config: StdioServer) -> dict[str, str]:
    async with open_client("env", config) as client:
        with trio.fail_after(30):
            result = await client.call_tool("environ", {})
    environ: dict[str, str] = json.loads(result.text)
    return environ


async def test_a_stdio_child_gets_only_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PASSED_ON", "asked-for")
    monkeypatch.setenv("NOT_ASKED", "left-behind")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    config = StdioServer(
        command=sys.executable,
        args=[SERVER, "/nonexistent"],
        env={"GIVEN": "configured"},
        inherit_env=["PASSED_ON"],
    )
    environ = await environ_of(config)
    allowed = {*DEFAULT_INHERITED_ENV, "PASSED_ON", "GIVEN", *PYTHON_OWN}
    assert set(environ) <= allowed, set(environ) - allowed
    assert environ["PASSED_ON"] == "asked-for" and environ["GIVEN"] == "configured"
    assert environ["PATH"] == "/usr/bin:/bin"
    text = json.dumps(environ)
    for secret in (*SECRETS.values(), "left-behind"):
        assert secret not in text


async def test_shell_functions_are_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "() { :; }; echo pwned")  # shellshock-style value
    environ = await environ_of(StdioServer(command=sys.executable, args=[SERVER, "/x"]))
    assert "SHELL" not in environ
