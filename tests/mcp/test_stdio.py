"""The stdio transport: a server is always shut down and reaped."""

from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors.mcp import (
    ClientOptions,
    McpConnectionClosed,
    McpTimeout,
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


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
async def test_a_hung_server_behind_a_wrapper_is_killed_with_its_group(
    stdio_peer: str, peers: Any
) -> None:
    python, *args = peers.stdio_argv(stdio_peer)
    # `; true` keeps sh as the parent (no exec): the server is our grandchild, as behind
    # npx or uvx.
    wrapped = StdioServer("/bin/sh", ["-c", '"$0" "$@"; true', python, *args])
    options = ClientOptions(request_timeout=10.0, shutdown_grace=0.3)
    server_pid = 0
    try:
        async with open_client("srv", wrapped, options=options) as client:
            server_pid = int((await client.call_tool("pid", {})).text)
            assert server_pid != client.transport.process.pid  # type: ignore[attr-defined]
            with pytest.raises(McpTimeout):
                await client.call_tool("hang", {}, timeout=0.5)
        with trio.fail_after(10):
            while alive(server_pid):  # noqa: ASYNC110 (an orphan has no event to wait on)
                await trio.sleep(0.05)
    finally:
        if server_pid and alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("ending", ["closed", "crashed"])
async def test_a_finished_server_leaves_no_pipe_open(ending: str) -> None:
    # Without the cycle collector: pipes must be closed by the transport, not by a
    # garbage collection that may come much later (a server that keeps crashing would
    # run the process out of file descriptors first).
    gc.collect()
    gc.disable()
    try:
        before = open_fds()
        mode = "faults" if ending == "crashed" else "paged"
        async with open_client("raw", StdioServer(sys.executable, [RAW, mode])) as client:
            if ending == "crashed":
                with pytest.raises(McpConnectionClosed):
                    await client.call_tool("crash", {})
        assert open_fds() - before == set()
    finally:
        gc.enable()
