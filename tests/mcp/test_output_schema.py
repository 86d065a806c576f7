"""A tool's ``structuredContent`` is checked against its ``outputSchema`` (a real stdio
server, through the connection actor and the executor): a matching value reaches the
model as JSON; a mismatched or missing one is a recoverable ``mcp_output_invalid``
error the model is told about, naming where the value breaks the schema."""

from __future__ import annotations

import json
import sys

import pytest

from agcore_actors.mcp import StdioServer
from agcore_actors.tools import ToolStatus
from tests.mcp.servers import run_tools, running
from tests.peers.mcp import RAW_SERVER

pytestmark = pytest.mark.slow


async def test_structured_content_is_checked_against_the_output_schema() -> None:
    server = StdioServer(sys.executable, [str(RAW_SERVER), "typed"])
    async with running({"srv": server}) as (_, _, executor, _):
        ok, wrong, missing = await run_tools(
            executor, ("srv-point", {"x": 3}), ("srv-point", {"x": "three"}), ("srv-point", {})
        )
    assert ok.status is ToolStatus.OK and json.loads(ok.content) == {"x": 3}
    assert wrong.status is ToolStatus.ERROR and wrong.recoverable
    assert "does not match its outputSchema: $.x: expected integer" in wrong.content
    assert "three" not in wrong.content  # the bad value is not passed on
    assert missing.status is ToolStatus.ERROR and missing.recoverable
    assert "no structuredContent" in missing.content
