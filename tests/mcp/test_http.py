"""The streamable HTTP transport against hand-written servers that misbehave."""

from __future__ import annotations

import pytest

from agcore_actors.mcp import ClientOptions, HttpServer, McpHttpError, open_client
from tests.peers.mcp import raw_http_server

TOKEN = "sk-live-0123456789abcdef"

pytestmark = pytest.mark.slow


async def test_an_http_error_body_never_shows_a_configured_header_value() -> None:
    with raw_http_server("echo-auth") as url:
        server = HttpServer(url, {"Authorization": f"Bearer {TOKEN}", "X-Api-Key": "k3y-abcdef"})
        with pytest.raises(McpHttpError) as info:
            async with open_client("gw", server, options=ClientOptions(connect_timeout=5)):
                pass
    error = info.value
    assert error.status == 401 and "invalid credentials" in str(error)
    assert TOKEN not in str(error) and TOKEN not in error.body
    assert "[redacted]" in str(error)
