"""Which MCP errors a turn can recover from, and which a retry may cure."""

from __future__ import annotations

from agcore_actors.mcp import (
    McpError,
    McpNotInitialized,
    McpTimeout,
)
from tests.peers.mcp import RAW_SERVER

RAW = str(RAW_SERVER)


def test_mcp_errors_are_not_recoverable() -> None:
    assert not McpError("x").is_recoverable()
    assert not McpTimeout("tools/call", 1).is_recoverable()
    assert not McpNotInitialized("srv").is_recoverable()
