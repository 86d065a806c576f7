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


def test_placeholders_are_expanded_from_the_environment() -> None:
    # Fails on the old code: "Bearer ${GITHUB_TOKEN}" went on the wire as it was.
    env = {"GITHUB_TOKEN": "ghp-1", "ROOT": "/srv", "PORT": "8080"}
    servers = parse_config(
        {
            "mcpServers": {
                "gh": {
                    "url": "http://h:${PORT}/mcp",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                },
                "fs": {
                    "command": "fs",
                    "args": ["${env:ROOT}", "$${kept}"],
                    "env": {"T": "${ROOT}"},
                },
            }
        },
        env=env,
    )
    assert servers["gh"] == HttpServer("http://h:8080/mcp", {"Authorization": "Bearer ghp-1"})
    assert servers["fs"] == StdioServer("fs", ["/srv", "${kept}"], {"T": "/srv"})


def test_a_missing_variable_is_a_config_error_naming_it() -> None:
    config = {"mcpServers": {"gh": {"url": "http://h/mcp", "headers": {"X": "${NOPE}"}}}}
    with pytest.raises(McpConfigError, match=r"mcpServers\.gh\.headers\.X: .*NOPE is not set"):
        parse_config(config, env={})


def test_legacy_sse_is_its_own_transport() -> None:
    # Fails on the old code: type "sse" was silently treated as streamable HTTP.
    servers = parse_config({"mcpServers": {"old": {"type": "sse", "url": "http://h/sse"}}})
    assert servers == {"old": HttpServer("http://h/sse", sse=True)}
    with pytest.raises(McpConfigError, match="type 'sse' needs 'url'"):
        parse_config({"mcpServers": {"old": {"type": "sse", "command": "x"}}})
    with pytest.raises(McpConfigError, match="unknown transport 'ws'"):
        parse_config({"mcpServers": {"x": {"type": "ws", "url": "ws://h"}}})
    assert parse_config({"x": {"type": "streamable-http", "url": "http://h/mcp"}})


def test_the_vscode_shape_is_read() -> None:
    # Fails on the old code: {"servers": ...} was taken as one server named "servers".
    servers = parse_config({"servers": {"t": {"type": "stdio", "command": "t"}}, "inputs": []})
    assert servers == {"t": StdioServer("t")}
    # A server that happens to be called "servers" is still one server.
    assert parse_config({"servers": {"command": "s"}}) == {"servers": StdioServer("s")}
