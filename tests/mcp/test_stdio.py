"""The stdio transport: a server is always shut down and reaped."""

from __future__ import annotations

import os
import sys

import pytest
import trio

from agcore_actors.mcp import (
    ClientOptions,
    StdioServer,
    open_client,
)
from tests.peers.mcp import RAW_SERVER

RAW = str(RAW_SERVER)


async def test_stubborn_server_is_killed_and_reaped() -> None:
    options = ClientOptions(shutdown_grace=0.3)
    async with open_client(
        "raw", StdioServer(sys.executable, [RAW, "stubborn"]), options=options
    ) as c:
        process = c.transport.process  # type: ignore[attr-defined]
        start = trio.current_time()
    assert process.returncode is not None and process.returncode < 0  # killed by a signal
    assert trio.current_time() - start < 5
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)  # reaped: not even a zombie
