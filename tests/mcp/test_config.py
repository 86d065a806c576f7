"""The ``mcpServers`` configuration format and a stdio server's environment."""

from __future__ import annotations

import pytest

from agcore_actors.mcp import (
    HttpServer,
    McpConfigError,
    StdioServer,
    parse_config,
)
from agcore_actors.mcp.policy import child_environment
from tests.peers.mcp import RAW_SERVER

RAW = str(RAW_SERVER)


def test_transport_debug() -> None:
    assert "echo" in repr(StdioServer("echo", ["hello"]))


def test_mcp_servers_config() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
                "web": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer t"}},
                "off": {"command": "x", "disabled": True},
            }
        }
    )
    assert servers == {
        "fs": StdioServer("npx", ["-y", "x"], {"A": "1"}),
        "web": HttpServer("http://h/mcp", {"Authorization": "Bearer t"}),
    }


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"mcpServers": {"a": {}}},
        {"mcpServers": {"a": {"command": "x", "url": "y"}}},
        {"mcpServers": {"a": {"command": 3}}},
        {"mcpServers": {"a": "x"}},
    ],
)
def test_bad_config_is_refused(bad: object) -> None:
    with pytest.raises(McpConfigError):
        parse_config(bad)


def test_child_environment_allow_list() -> None:
    parent = {"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-x", "EXTRA": "e", "SHELL": "()"}
    env = child_environment(StdioServer("x", env={"MINE": "1"}, inherit_env=["EXTRA"]), parent)
    assert env == {"PATH": "/bin", "HOME": "/h", "EXTRA": "e", "MINE": "1"}
